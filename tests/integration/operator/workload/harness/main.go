// The harness of the Go example of docs/workload-identity.md (example.go: the page's code): for each
// credential bundle named on the command line, put it where sslCert points (one rename, as the kubelet
// refreshes it), open a new connection with the page's open(), and print who it logged in as.
package main

import (
	"fmt"
	"os"
)

func main() {
	for _, bundle := range os.Args[1:] {
		if err := login(bundle); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func login(bundle string) error {
	pem, err := os.ReadFile(bundle)
	if err != nil {
		return err
	}
	live := os.Getenv("sslCert")
	if err := os.WriteFile(live+".next", pem, 0o600); err != nil {
		return err
	}
	if err := os.Rename(live+".next", live); err != nil {
		return err
	}
	db, err := open()
	if err != nil {
		return err
	}
	defer db.Close()
	var user, database string
	if err := db.QueryRow("SELECT CURRENT_USER(), COALESCE(DATABASE(), '')").Scan(&user, &database); err != nil {
		return err
	}
	fmt.Printf("%s\t%s\n", user, database)
	return nil
}
