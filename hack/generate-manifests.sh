#!/usr/bin/env bash
# Regenerate every manifest that is derived from another source, so that no copy is ever edited by hand:
#   - the CRD copies in charts/dbuser-operator/crds/ and config/crd/bases/, from the API models (the same
#     generator as crds/: python -m dbuser_operator.api.crd);
#   - config/{rbac,manager,prometheus}/ and config/crd/kustomization.yaml, from the Helm chart
#     (hack/config_from_chart.py: `helm template` with the default values).
#
#   hack/generate-manifests.sh           write them
#   hack/generate-manifests.sh --check   write nothing; exit 1 with a diff when one is stale (a test runs this)
#
# HELM names the helm binary (default: the pinned one of hack/testbin.sh, else helm on the PATH).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${PYTHON:-.venv/bin/python}
if [[ -z "${HELM:-}" ]]; then
  HELM="$(hack/testbin.sh --dir)/helm"
  [[ -x "$HELM" ]] || HELM=helm
fi
check=()
[[ "${1:-}" == "--check" ]] && check=(--check)

status=0
for directory in charts/dbuser-operator/crds config/crd/bases; do
  "$PYTHON" -m dbuser_operator.api.crd "${check[@]}" --output "$directory" || status=1
done
"$PYTHON" hack/config_from_chart.py --helm "$HELM" "${check[@]}" || status=1
exit "$status"
