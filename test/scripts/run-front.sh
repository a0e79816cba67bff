#!/usr/bin/env bash
# make run-front: the layout of a cluster DNS you do not replace
# (docs/platforms.md), on loopback. A local kube-apiserver + etcd with the
# example objects of manifests/examples (as make run), coredns-mcs
# standalone (build/coredns with the Corefile of
# manifests/standalone/configmap.yaml), and in front of it stock CoreDNS at
# COREDNS_VERSION (default: the version kubeadm ships) with PLATFORM's
# default Corefile (kubeadm or k3s) and the server blocks kubectl mcs front
# adds for that version (test/cmd/localfront writes both Corefiles with
# internal/front). The front's upstream is this machine's resolver
# (forward . /etc/resolv.conf), as a cluster DNS's is its node's.
#
# It prints dig lines through the front, the PIDs, and how to hang, resume,
# stop and start again the standalone server while lookups go on. Ctrl-C
# stops everything this script started.
#
# Ports on 127.0.0.1: PORT (the front's DNS, default 1053), STANDALONE_PORT
# (default 1054), STAND_IN_PORT (the front's stand-in, default 5301, as in a
# pod), HEALTH_PORT, READY_PORT, METRICS_PORT (the front's, default 18080,
# 18181, 19153). A default that is taken gives way to a free port; a port
# set is used as set. The standalone server's health, ready and metrics
# ports are free ones.
set -euo pipefail
cd "$(dirname "$0")/../.."

platform=${PLATFORM:-kubeadm}
dir=$(mktemp -d -t coredns-mcs-run-front.XXXXXX)
cluster_pid= standalone_pid= front_pid=
cleanup() {
  trap - INT TERM EXIT USR1
  # A hung (SIGSTOP) server takes no signal but SIGKILL until resumed.
  [ -n "$standalone_pid" ] && kill -CONT "$standalone_pid" 2>/dev/null
  for pid in $front_pid $standalone_pid $cluster_pid; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap cleanup EXIT
. test/scripts/runlib.sh

case $platform in
kubeadm | k3s) ;;
*) echo "PLATFORM=$platform: make run-front runs kubeadm's or k3s's Corefile" >&2; exit 1 ;;
esac
run_build_helpers ./test/cmd/localcluster ./test/cmd/freeport ./test/cmd/localfront
version=${COREDNS_VERSION:-$("$dir/localfront" -default-version)}
version=${version#v}
# Stock CoreDNS as the platform ships it: the release's own main package
# and dependencies, cached as the tests cache it (test/internal/harness).
stock=$("$dir/localfront" -stock "$version")

run_start_cluster
run_pick_ports PORT=1053/dns STANDALONE_PORT=1054/dns STAND_IN_PORT=5301/dns \
  HEALTH_PORT=18080 READY_PORT=18181 METRICS_PORT=19153 \
  STANDALONE_HEALTH_PORT=0 STANDALONE_READY_PORT=0 STANDALONE_METRICS_PORT=0
# Sets standalone_corefile, front_corefile and read_timeout.
written=$("$dir/localfront" -dir "$dir" -kubeconfig "$kubeconfig" -platform "$platform" -coredns-version "$version" \
  -port "$PORT" -health-port "$HEALTH_PORT" -ready-port "$READY_PORT" -metrics-port "$METRICS_PORT" \
  -stand-in-port "$STAND_IN_PORT" -standalone-port "$STANDALONE_PORT" -standalone-health-port "$STANDALONE_HEALTH_PORT" \
  -standalone-ready-port "$STANDALONE_READY_PORT" -standalone-metrics-port "$STANDALONE_METRICS_PORT")
eval "$written"

start_standalone() {
  build/coredns -conf "$standalone_corefile" >>"$dir/standalone.log" 2>&1 &
  standalone_pid=$!
  run_wait_ready "coredns-mcs standalone" "$standalone_pid" "$STANDALONE_READY_PORT" "$STANDALONE_PORT" "$dir/standalone.log"
}
start_standalone
"$stock" -conf "$front_corefile" >"$dir/front.log" 2>&1 &
front_pid=$!
run_wait_ready "the front (stock CoreDNS $version)" "$front_pid" "$READY_PORT" "$PORT" "$dir/front.log"

dig="dig @127.0.0.1 -p $PORT"
# What the PID lines say; printed again when the standalone server is
# started again, with its new PID.
controls() {
  printf '  %-17s # %s\n' >&2 \
    "kill -STOP $standalone_pid" "hang it (a frozen or starved pod)" \
    "kill -CONT $standalone_pid" "resume it" \
    "kill $standalone_pid" "stop it: it answers through its 5 s lameduck, as a pod does, then its port refuses" \
    "kill -USR1 $$" "start it again, once stopped"
}
if [ -n "$read_timeout" ]; then
  hung="cluster.local import names answer NXDOMAIN within forward's read_timeout ($read_timeout; clusterset
  names SERVFAIL within 1s), then at once once two health checks have failed (about 2.5 s); they answer
  again within a health check (0.5 s) of resuming."
else
  hung="CoreDNS $version has no forward read_timeout (it came in 1.14.5): for the first seconds of a hang,
  each import name costs about 2 s (forward's fixed read timeout) before its NXDOMAIN (clusterset names:
  SERVFAIL), then at once once two health checks have failed (docs/platforms.md, \"Never worse than the cluster DNS alone\")."
fi

cat >&2 <<MSG

The front: stock CoreDNS $version (PID $front_pid) with $platform's Corefile and the blocks kubectl mcs front adds,
on 127.0.0.1:$PORT. It forwards the names only coredns-mcs knows to coredns-mcs standalone (PID $standalone_pid,
build/coredns) on 127.0.0.1:$STANDALONE_PORT, and everything else to this machine's resolver. Through the front:

  $dig checkout.demo.svc.cluster.local      # import only: forwarded, answered from the import
  $dig checkout.demo.svc.clusterset.local   # the clusterset zone: forwarded
  $dig frontend.demo.svc.cluster.local      # local Service: the front's own kubernetes plugin, 10.96.100.100
  $dig -x 10.42.0.10                        # PTR of a ClusterSetIP: forwarded
  $dig example.com                          # external: the front's forward . /etc/resolv.conf

Watch lookups carry on, in another terminal:

  while :; do for n in checkout.demo.svc.cluster.local frontend.demo.svc.cluster.local example.com; do echo "\$(date +%T.%N | cut -c1-12) dig \$n \$($dig +tries=1 +time=3 \$n | grep -Eo 'status: [A-Z]+|time: [0-9]+ msec|timed out' | paste -sd' ')"; done; for n in checkout example.com; do echo "\$(date +%T.%N | cut -c1-12) pod \$($dir/localfront -lookup \$n -server 127.0.0.1:$PORT)"; done; sleep 0.2; done

Each "dig" line is one question of a fully qualified name: time, name, status, query time. Each "pod"
line is a lookup as a pod in the namespace demo makes it, a short name through its search list
(demo.svc.cluster.local svc.cluster.local cluster.local, ndots:5; test/cmd/localfront): every name
it asks in turn, on past NXDOMAIN, with its status and time, then the whole lookup's time. "checkout"
answers at its first expansion, from the import; "example.com" asks three expansions before
example.com itself, and one of them (example.com.svc.cluster.local, of a service name's shape) is
forwarded to coredns-mcs: that is where a hang shows in an external name's lookup.

and take the standalone server (PID $standalone_pid) away meanwhile:

MSG
controls
cat >&2 <<MSG

What to expect: external and local names answer as before, whatever the standalone server does; only
import and clusterset names need it. Stopped, cluster.local import names answer NXDOMAIN at once (TTL 0, which
nothing caches) and clusterset names SERVFAIL (never NXDOMAIN: an import is not told it does not exist). Hung,
  $hung

PIDs: front $front_pid, standalone $standalone_pid, API server $cluster_pid (localcluster), this script $$.
Corefiles: $front_corefile, $standalone_corefile
Logs: $dir/front.log, $dir/standalone.log
Ports of 127.0.0.1: front $PORT (stand-in $STAND_IN_PORT, health $HEALTH_PORT, ready $READY_PORT, metrics $METRICS_PORT),
standalone $STANDALONE_PORT (health $STANDALONE_HEALTH_PORT, ready $STANDALONE_READY_PORT, metrics $STANDALONE_METRICS_PORT).
PLATFORM=k3s runs k3s's Corefile; COREDNS_VERSION=1.14.4 the CoreDNS k3s ships. Ctrl-C stops everything.
MSG

restart() {
  if [ -n "$standalone_pid" ]; then
    echo "coredns-mcs standalone is running (PID $standalone_pid): stop it first (kill $standalone_pid)." >&2
    return
  fi
  start_standalone
  echo "coredns-mcs standalone started again: PID $standalone_pid." >&2
  controls
}
trap restart USR1
while :; do
  wait -n || true # returns when a child ends, or on USR1
  kill -0 "$front_pid" 2>/dev/null || { echo "the front (PID $front_pid) exited; its log:" >&2; tail -n 20 "$dir/front.log" >&2; exit 1; }
  kill -0 "$cluster_pid" 2>/dev/null || { echo "the local API server (PID $cluster_pid) exited" >&2; exit 1; }
  if [ -n "$standalone_pid" ] && ! kill -0 "$standalone_pid" 2>/dev/null; then
    echo "coredns-mcs standalone (PID $standalone_pid) exited; kill -USR1 $$ starts it again." >&2
    standalone_pid=
  fi
done
