# The two-host suite's runs of the application API's examples across the wire, sourced by
# ci/softroce/two-host-suite.sh (its variables and helpers: out, me, xrdma, meet, measured,
# figure, server_ip, ...): app echo across the wire.

# The echo examples (staged beside XRDMA_BIN) across the wire: echo_server on b listening on
# its address, echo_client on a calling it 20 times for each size from 64 B to 1 MiB. Passes
# when the client checked every reply; the 64 B median round trip goes to figures.env.
app_echo_check() {
  local dir port=18645 rc=0 pid rtt
  dir=$(dirname "$xrdma")
  [[ -x $dir/echo_server && -x $dir/echo_client ]] ||
    { echo "no echo examples beside $xrdma"; return 1; }
  if [[ $me == b ]]; then
    "$dir/echo_server" "$server_ip:$port" > "$out/app-echo-server.log" 2>&1 &
    pid=$!
    # The server prints its address once it listens.
    for _ in $(seq 100); do
      grep -q '^echo server on ' "$out/app-echo-server.log" && break
      sleep 0.1
    done
    grep -q '^echo server on ' "$out/app-echo-server.log" || rc=1
    meet app-echo.listening 60 || rc=1
    meet app-echo.done 400 || rc=1
    kill "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    return "$rc"
  fi
  meet app-echo.listening 60 || return 1
  timeout 300 "$dir/echo_client" "$server_ip:$port" 20 > "$out/app-echo-client.txt" 2>&1 || rc=$?
  meet app-echo.done 400 || rc=1
  cat "$out/app-echo-client.txt"
  ((rc == 0)) || return 1
  rtt=$(awk '$1 == "64" && $2 == "B:" { v = $6; if ($7 == "ms") v *= 1000; printf "%.3f", v }' \
    "$out/app-echo-client.txt")
  softroce_num "$rtt" || { echo "no 64 B round trip in the client's output"; return 1; }
  figure wire_app_echo_rtt_64_us "$rtt"
  measured "app echo across the wire, 64 B: median round trip $rtt us (server on b, client on a)"
}
