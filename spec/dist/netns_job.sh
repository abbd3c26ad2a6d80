#!/bin/sh
# Two "hosts" on one machine: network namespaces A and B joined by a veth pair
# (10.200.0.1 <-> 10.200.0.2), mpirun started in A with a hostfile naming both
# addresses and an rsh agent that "logs in" to B with `ip netns exec`, so the job's
# out-of-band and MPI traffic crosses a network interface. Runs kv_basics.lua on the two
# ranks, prints the bytes the veth sent, and removes what it made.
# Usage: netns_job.sh SPEC_DIST_DIR; exit 77 when namespaces cannot be made here.
set -u
dir=$1
A=lmx$$a B=lmx$$b
work=$(mktemp -d)
cleanup() { ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
if ! ip netns add "$A" 2>"$work/err" || ! ip netns add "$B" 2>>"$work/err"; then
  echo "SKIP cannot make network namespaces: $(cat "$work/err")"; exit 77
fi
ip link add "${A}v" type veth peer name "${B}v" || { echo "SKIP cannot make a veth pair"; exit 77; }
ip link set "${A}v" netns "$A" && ip link set "${B}v" netns "$B" &&
ip -n "$A" addr add 10.200.0.1/24 dev "${A}v" && ip -n "$B" addr add 10.200.0.2/24 dev "${B}v" &&
ip -n "$A" link set "${A}v" up && ip -n "$B" link set "${B}v" up &&
ip -n "$A" link set lo up && ip -n "$B" link set lo up || { echo "SKIP cannot configure the veth pair"; exit 77; }
cat > "$work/agent" <<AGENT
#!/bin/sh
host=\$1; shift
case "\$host" in 10.200.0.2) ns=$B ;; *) ns=$A ;; esac
exec ip netns exec "\$ns" sh -c "\$*"
AGENT
chmod +x "$work/agent"
printf '10.200.0.1 slots=1\n10.200.0.2 slots=1\n' > "$work/hosts"
before=$(ip -n "$A" -s -j link show "${A}v" | sed 's/.*"tx":{"bytes":\([0-9]*\).*/\1/')
ip netns exec "$A" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
  timeout 120 mpirun --hostfile "$work/hosts" -np 2 --mca plm_rsh_agent "$work/agent" \
  --mca btl self,tcp --mca btl_tcp_if_include 10.200.0.0/24 --mca oob_tcp_if_include 10.200.0.0/24 \
  -x LUA_PATH -x LUAMX_LIB ${LD_PRELOAD:+-x LD_PRELOAD -x ASAN_OPTIONS} luajit "$dir/kv_basics.lua" dist_sync
rc=$?
after=$(ip -n "$A" -s -j link show "${A}v" | sed 's/.*"tx":{"bytes":\([0-9]*\).*/\1/')
echo "VETH_TX_BYTES=$((after - before))"
exit $rc
