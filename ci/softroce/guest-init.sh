#!/bin/busybox sh
# shellcheck shell=sh
#
# /init of the Soft-RoCE guest's initramfs: PID 1, with nothing but busybox and the kernel
# modules that prepare.sh put into /lib/modules (load order in /lib/modules/order).
#
# What it does, in order:
#   1. loads the modules (virtio + 9p, virtio_net, veth, sch_netem, crc32_generic, the RDMA
#      core, rdma_rxe, rdma_ucm);
#   2. mounts the host's / read-only over 9p (tag "hostroot") at /host, with fresh proc, sys,
#      dev, a tmpfs /tmp and /run, and the writable 9p share "results" at the host path given by
#      softroce_results=, so a path is the same on both sides;
#   3. inside that root, ONE Soft-RoCE device rxe0 on a netdev addressed softroce_ip= (default
#      10.99.0.1/24):
#        - by default a veth pair, rxe0 on veth0: the guest has no NIC, so the address exists
#          only inside the guest, and both ends of every test use rxe0 with the same GID (two
#          rxe devices in one network namespace cannot talk: local traffic goes through lo,
#          which has no rxe);
#        - with softroce_netdev=eth0, the guest's virtio NIC eth0 (two-host.sh: a wire to
#          another guest);
#   4. waits for port 1 to be ACTIVE and the IPv4-mapped RoCE v2 GID to appear;
#   5. runs softroce_cmd= (an executable file, usually run.sh's generated script) chrooted into
#      the host root, with SOFTROCE_DEV, SOFTROCE_IP, SOFTROCE_GID_INDEX, SOFTROCE_RESULTS set;
#   6. prints (and writes to softroce_status=, default RESULTS/.softroce-status) the status line
#         SOFTROCE-STATUS token=<softroce_token> stage=<setup|command> rc=<n>
#      then powers off. The guest's exit status does not reach qemu; run.sh parses this line.
#
# Markers on the console: "SOFTROCE-READY token=... uptime_s=..." right before the command.

/bin/busybox --install -s /bin
export PATH=/bin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

TOKEN=none
RESULTS=
WORKDIR=
CMD=
IP_CIDR=10.99.0.1/24
DEV=rxe0
NETDEV=
STATUS_FILE=
# shellcheck disable=SC2013 # the command line is one line of space-separated words
for word in $(cat /proc/cmdline); do
  case "$word" in
    softroce_token=*) TOKEN=${word#*=} ;;
    softroce_results=*) RESULTS=${word#*=} ;;
    softroce_workdir=*) WORKDIR=${word#*=} ;;
    softroce_cmd=*) CMD=${word#*=} ;;
    softroce_ip=*) IP_CIDR=${word#*=} ;;
    softroce_netdev=*) NETDEV=${word#*=} ;;
    softroce_status=*) STATUS_FILE=${word#*=} ;;
  esac
done

[ -n "$STATUS_FILE" ] || STATUS_FILE=$RESULTS/.softroce-status

status() { # stage rc
  line="SOFTROCE-STATUS token=$TOKEN stage=$1 rc=$2"
  if [ -n "$RESULTS" ] && [ -d "/host$RESULTS" ]; then
    echo "$line" > "/host$STATUS_FILE" 2>/dev/null
  fi
  sync
  echo "$line"
  # Give the UART time to drain before the machine disappears.
  sleep 0.3
  poweroff -f
}

setup_failed() { # message
  echo "softroce-init: setup failed: $1"
  if [ -x /host/usr/bin/env ]; then
    echo "softroce-init: links and RDMA devices now:"
    in_root ip -br link 2>&1
    in_root rdma link 2>&1
  fi
  status setup 125
}

log() { echo "softroce-init: $*"; }

# Runs a host tool inside the host root. The host's env does the PATH lookup: busybox-static
# would run its own applet of the same name (ip, ...) instead of the host's program.
in_root() {
  chroot /host /usr/bin/env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}

# 1. Modules, in dependency order (resolved by prepare.sh from modules.dep).
while read -r mod; do
  [ -n "$mod" ] || continue
  insmod "/lib/modules/$mod.ko" || setup_failed "insmod $mod"
done < /lib/modules/order

# 2. The host root (read-only) and the writable results share.
mkdir -p /host
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose hostroot /host \
  || setup_failed "mount of the host root over 9p"
mount -t proc proc /host/proc || setup_failed "proc in the host root"
mount -t sysfs sysfs /host/sys || setup_failed "sysfs in the host root"
mount -t devtmpfs devtmpfs /host/dev || setup_failed "devtmpfs in the host root"
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /host/dev/shm
mount -t tmpfs -o mode=1777 tmpfs /host/tmp || setup_failed "tmpfs on /tmp"
mount -t tmpfs -o mode=755 tmpfs /host/run || setup_failed "tmpfs on /run"
[ -n "$RESULTS" ] || setup_failed "no softroce_results= on the kernel command line"
# The command's working directory (a checkout, say) is shared read-only at its own path: under
# the host's /tmp it would otherwise be hidden by the guest's fresh /tmp.
if [ -n "$WORKDIR" ] && [ ! -d "/host$WORKDIR" ]; then
  mkdir -p "/host$WORKDIR" || setup_failed "mkdir of $WORKDIR in the guest's /tmp"
  mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose workdir \
    "/host$WORKDIR" || setup_failed "mount of the working directory share at $WORKDIR"
fi
# A results directory under the host's /tmp does not exist in the guest's fresh /tmp.
mkdir -p "/host$RESULTS" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 results "/host$RESULTS" \
  || setup_failed "mount of the results share at $RESULTS"

# 3. Network and the rxe device, with the host's own ip and rdma tools.
in_root ip link set lo up || setup_failed "lo up"
if [ -z "$NETDEV" ]; then
  NETDEV=veth0
  in_root ip link add veth0 type veth peer name veth1 || setup_failed "veth pair"
  in_root ip link set veth1 up || setup_failed "veth1 up"
else
  [ -d "/sys/class/net/$NETDEV" ] || setup_failed "no netdev $NETDEV (is the NIC there?)"
fi
in_root ip addr add "$IP_CIDR" dev "$NETDEV" || setup_failed "address $IP_CIDR on $NETDEV"
in_root ip link set "$NETDEV" up || setup_failed "$NETDEV up"
in_root rdma link add "$DEV" type rxe netdev "$NETDEV" || setup_failed "rdma link add $DEV"

# 4. Port ACTIVE and the IPv4-mapped RoCE v2 GID (::ffff:a.b.c.d) in the GID table.
IP=${IP_CIDR%/*}
old_ifs=$IFS
IFS=.
# shellcheck disable=SC2086 # split the dotted quad on purpose
set -- $IP
IFS=$old_ifs
WANT_GID=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$1" "$2" "$3" "$4")
PORT_DIR=/sys/class/infiniband/$DEV/ports/1
GID_INDEX=
tries=0
while [ "$tries" -lt 100 ]; do
  if grep -q ACTIVE "$PORT_DIR/state" 2>/dev/null; then
    for f in "$PORT_DIR"/gids/*; do
      i=${f##*/}
      if [ "$(cat "$f" 2>/dev/null)" = "$WANT_GID" ] \
        && [ "$(cat "$PORT_DIR/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ]; then
        GID_INDEX=$i
        break
      fi
    done
  fi
  [ -n "$GID_INDEX" ] && break
  tries=$((tries + 1))
  sleep 0.1
done
[ -n "$GID_INDEX" ] || setup_failed "no ACTIVE port with RoCE v2 GID $WANT_GID on $DEV after 10 s"
log "$DEV on $NETDEV: port ACTIVE, GID index $GID_INDEX = ::ffff:$IP (RoCE v2)"

# 5. The command.
[ -n "$CMD" ] || setup_failed "no softroce_cmd= on the kernel command line"
read -r uptime_s _ < /proc/uptime
echo "SOFTROCE-READY token=$TOKEN uptime_s=$uptime_s"
env -i \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/tmp TMPDIR=/tmp TERM=dumb LANG=C.UTF-8 \
  SOFTROCE_DEV="$DEV" SOFTROCE_NETDEV="$NETDEV" SOFTROCE_IP="$IP" \
  SOFTROCE_GID_INDEX="$GID_INDEX" SOFTROCE_RESULTS="$RESULTS" \
  chroot /host "$CMD" < /dev/null
rc=$?

# 6. Status and power off.
status command "$rc"
