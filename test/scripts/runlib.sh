# Sourced by test/scripts/run.sh (make run) and test/scripts/run-front.sh (make run-front):
# the local API server with the example objects, the loopback ports, and
# readiness. The caller sets dir (a temporary directory of its own) first.

# run_build_helpers PACKAGE...: go build the helper commands into $dir.
run_build_helpers() {
  go build -o "$dir/" "$@"
}

# run_start_cluster: a local kube-apiserver + etcd (test/cmd/localcluster)
# with manifests/examples applied; sets cluster_pid, and kubeconfig once it
# is ready. Only the two binaries of the kube set that a local API server
# needs are built; the rest of the set (kubelet, kubectl, ...) is for the
# node tests.
run_start_cluster() {
  local assets start
  if ! assets=$(bash test/testbin/build.sh --cached kube:kube-apiserver,etcd 2>/dev/null); then
    # Measured with an empty Go build cache on a 2-core machine that also ran
    # other builds: 10m22s and 12m50s.
    echo "Building kube-apiserver and etcd from source, once: about 10 minutes on 2 cores, less with" >&2
    echo "more (then cached in ${XDG_CACHE_HOME:-$HOME/.cache}/coredns-mcs/testbin)..." >&2
    start=$SECONDS
    assets=$(bash test/testbin/build.sh kube:kube-apiserver,etcd)
    echo "Built kube-apiserver and etcd in $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s." >&2
  fi
  KUBEBUILDER_ASSETS="$assets" "$dir/localcluster" \
    -kubeconfig-out "$dir/kubeconfig" -apply manifests/examples -ready-file "$dir/cluster-ready" &
  cluster_pid=$!
  for _ in $(seq 1 600); do
    [ -f "$dir/cluster-ready" ] && break
    kill -0 "$cluster_pid" 2>/dev/null || { echo "the local API server failed to start" >&2; exit 1; }
    sleep 0.2
  done
  [ -f "$dir/cluster-ready" ] || { echo "the local API server did not come up in time" >&2; exit 1; }
  kubeconfig=$dir/kubeconfig
}

# run_pick_ports NAME=DEFAULT[/dns]...: sets each variable NAME to a port
# on 127.0.0.1. One the user set (NAME in the environment) is kept, and
# must be free; otherwise DEFAULT, or a free port the kernel gives if
# DEFAULT is taken (said on stderr); DEFAULT 0 is any free port. /dns
# wants the port free for UDP and TCP. Call it right before starting the
# servers (test/cmd/freeport).
run_pick_ports() {
  local spec name def dns args=() names=() defaults=() given=() out i=0 port
  for spec in "$@"; do
    name=${spec%%=*} def=${spec#*=} dns=
    [[ $def == */dns ]] && dns=/dns def=${def%/dns}
    names+=("$name") defaults+=("$def")
    if [ -n "${!name:-}" ]; then
      args+=("=${!name}$dns") given+=(1)
    else
      args+=("$def$dns") given+=(0)
    fi
  done
  out=$("$dir/freeport" "${args[@]}") || exit 1
  for port in $out; do
    if [ "${given[i]}" = 0 ] && [ "${defaults[i]}" != 0 ] && [ "$port" != "${defaults[i]}" ]; then
      echo "Port ${defaults[i]} of 127.0.0.1 is taken: ${names[i]}=$port instead." >&2
    fi
    printf -v "${names[i]}" %s "$port"
    i=$((i + 1))
  done
}

# run_ready READY_PORT DNS_PORT: the ready plugin on READY_PORT answers 200
# (GET /ready, without needing curl; a subshell, as a failed exec would end
# the script), and DNS_PORT takes connections (the ready plugin may answer
# first).
run_ready() {
  ( exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /ready HTTP/1.0\r\n\r\n' >&3 && head -1 <&3 | grep -q ' 200 ' ) 2>/dev/null &&
  ( exec 3<>"/dev/tcp/127.0.0.1/$2" ) 2>/dev/null
}

# run_wait_ready NAME PID READY_PORT DNS_PORT [LOG]: waits up to 30 s for
# run_ready; fails, with the last lines of LOG, if the process PID ends or
# time runs out.
run_wait_ready() {
  local name=$1 pid=$2 ready=$3 port=$4 log=${5:-}
  for _ in $(seq 1 300); do
    run_ready "$ready" "$port" && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$name failed to start" >&2
      [ -n "$log" ] && tail -n 20 "$log" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "$name was not ready within 30 s" >&2
  [ -n "$log" ] && tail -n 20 "$log" >&2
  exit 1
}
