"""The operator's bookkeeping schema: the ledger of what it owns (:mod:`.ownership` over :mod:`.books`),
the names every server keeps for itself, the leader's fence, and the reads that join the ledger with the
server's accounts (the inventory, the access report, who holds a name)."""
