#!/bin/bash
# usage: hand_restart.sh FLEET_OPERATOR_PID OPERATOR_SRC LABEL [profile]   (OUT: where logs and profiles go, /tmp)
# Starts $PYTHON (.venv/bin/python) -m dbuser_operator with the fleet operator's argv/env (new ports), PYTHONPATH=OPERATOR_SRC,
# under nice 19; polls /readyz (0.1 s) and the metrics (0.3 s); prints its CPU s at ready, at the first
# DatabaseUser turns and at the end of their first pass, and the first pass s; kills it.
# (from /work/handrestart.sh)
pid=$1; src=$2; label=$3; prof=$4
py=${PYTHON:-.venv/bin/python}; out=${OUT:-/tmp}
mapfile -d '' argv < /proc/$pid/cmdline
envs=()
while IFS= read -r -d '' e; do case "$e" in PYTHONPATH=*) ;; *) envs+=("$e");; esac; done < /proc/$pid/environ
mport=$((50000 + RANDOM % 9000)); hport=$((mport+1))
args=()
for a in "${argv[@]:1}"; do
  case "$a" in
    --metrics-bind-address=*) args+=("--metrics-bind-address=127.0.0.1:$mport");;
    --health-probe-bind-address=*) args+=("--health-probe-bind-address=127.0.0.1:$hport");;
    --log-level=*) args+=("--log-level=info");;
    *) args+=("$a");;
  esac
done
log=$out/hand-$label.log
start=$(date +%s.%N)
env -i "${envs[@]}" PYTHONPATH=$src nice -n 19 "$py" "${args[@]}" > $log 2>&1 &
op=$!
if [ -n "$prof" ]; then "$(dirname "$py")/py-spy" record --pid=$op --rate=200 --gil --format=raw --output=$out/prof-$label.txt > $out/pyspy-$label.log 2>&1 & spy=$!; fi
until curl -sf http://127.0.0.1:$hport/readyz >/dev/null 2>&1; do kill -0 $op 2>/dev/null || { echo "$label: the operator exited (see $log)"; exit 1; }; sleep 0.1; done
ready=$(echo "$(date +%s.%N) - $start" | bc)
cpu_ready=$(awk '{print ($14+$15)/100}' /proc/$op/stat)
cpu_turn=""
while :; do
  sleep 0.3
  c=$(awk '{print ($14+$15)/100}' /proc/$op/stat)
  all=$(curl -s http://127.0.0.1:$mport/metrics)
  m=$(echo "$all" | grep '^dbuser_operator_first_pass_seconds' )
  if [ -z "$cpu_turn" ]; then
    rem=$(echo "$all" | grep '^dbuser_operator_first_pass_remaining{controller="databaseuser"}' | awk '{print $2}')
    if [ -n "$rem" ] && [ "${rem%.*}" -lt 9990 ]; then cpu_turn=$c; fi
  fi
  if echo "$m" | grep -q 'controller="databaseuser"'; then break; fi
done
cpu=$(awk '{print ($14+$15)/100}' /proc/$op/stat); hwm=$(grep VmHWM /proc/$op/status)
echo "$label ready ${ready}s cpu_at_ready ${cpu_ready}s cpu_at_first_turns ${cpu_turn}s cpu_at_first_pass_end ${cpu}s $hwm $(uptime | sed 's/.*load/load/')"
echo "$m"
curl -s http://127.0.0.1:$mport/metrics | grep -E '^dbuser_operator_converged_at_start_total|^rest_client_requests_total' | grep -v 'method="GET"\|method="WATCH"\|method="LIST"'
if [ -n "$prof" ]; then kill -INT $spy; wait $spy; fi
kill $op; wait $op
