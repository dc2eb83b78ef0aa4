#!/usr/bin/env bash
# Prepares everything a Soft-RoCE (rdma_rxe) guest needs on this host: the host packages,
# Debian's stock kernel (the host kernel has no RDMA) and a tiny busybox initramfs.
#
# usage: ci/softroce/prepare.sh [WORKDIR]      (default: target/softroce under the repo root)
#
# Steps, each skipped when its result is already in WORKDIR:
#   1. host packages: qemu-system-x86 busybox-static kmod cpio rdma-core ibverbs-utils perftest
#      iproute2 (ip, tc; to boot and test) and libibverbs-dev librdmacm-dev libclang-dev (to
#      build rdma-sys); when one is missing and we are root: apt-get update + apt-get install.
#      Wanted, not needed (installed as root, else a note): tcpdump, and with SOFTROCE_TSHARK=1
#      tshark (about 22 MB to download, 125 MB installed), which two-host-suite.sh uses to
#      decode its capture a second way.
#   2. the kernel: `apt-get download` of the linux-image-<version> that linux-image-amd64
#      depends on, into WORKDIR/dl (kept: a second run downloads nothing), `dpkg -x`,
#      `depmod -b`, then `modprobe --show-depends` gives the load order of the modules the
#      guest needs; vmlinuz and those modules are kept, the unpacked tree is removed.
#   3. WORKDIR/initrd.gz: busybox-static, the modules (decompressed), guest-init.sh as /init.
#   4. WORKDIR/softroce.env: KVER, KERNEL, INITRD (absolute paths), read by run.sh.
# SOFTROCE_REFRESH=1 forgets the cached kernel and downloads the current one.
#
# Exit status: 0 prepared; 3 this host cannot run the guest (the reason is printed on a line
# starting "prepare: unavailable:"): not x86_64 or not Debian-based, packages missing and not
# root, or apt could not reach the package registry; anything else is an error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
workdir=${1:-$repo/target/softroce}

# Modules the guest loads explicitly; their dependencies come from modules.dep. crc32_generic
# is only requested at run time (crypto_alloc_shash("crc32")), so no dependency names it, and
# without it `rdma link add` fails with "failed to add". rdma_ucm makes rdma_cm usable.
# virtio_net is the NIC of two-host.sh's guests, sch_netem gives `tc qdisc ... netem`.
readonly MODULE_TARGETS=(virtio_pci 9pnet_virtio 9p virtio_net veth sch_netem crc32_generic
  ib_uverbs rdma_rxe rdma_ucm)
readonly PACKAGES=(qemu-system-x86 busybox-static kmod cpio rdma-core ibverbs-utils perftest
  iproute2 libibverbs-dev librdmacm-dev libclang-dev)
# Wanted, not needed: without them the two-host suite prints SKIP for its capture checks.
optional=(tcpdump)
[[ ${SOFTROCE_TSHARK:-0} == 1 ]] && optional+=(tshark)
readonly OPTIONAL=("${optional[@]}")

say() { printf 'prepare: %s\n' "$*"; }
unavailable() { printf 'prepare: unavailable: %s\n' "$*"; exit 3; }
die() { printf 'prepare: error: %s\n' "$*" >&2; exit 1; }
now() { printf '%s' "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

t_start=$(now)

[[ $(uname -m) == x86_64 ]] \
  || unavailable "host is $(uname -m); the guest chroots into the host root, which must be x86_64"
if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
  unavailable "not a Debian-based host (no dpkg-query/apt-get)"
fi

is_root() { [[ $(id -u) -eq 0 ]]; }
apt_updated=0
apt_update() {
  ((apt_updated)) && return 0
  say "apt-get update"
  apt-get update -qq || unavailable "apt-get update failed (no network to the package registry?)"
  apt_updated=1
}

# --- 1. host packages -----------------------------------------------------------------------
installed() { [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true) == installed ]]; }
missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done
for p in "${OPTIONAL[@]}"; do
  installed "$p" && continue
  if is_root; then
    missing+=("$p")
  else
    say "not installing $p (not root): the two-host suite will SKIP what needs it"
  fi
done
if ((${#missing[@]})); then
  is_root || unavailable "missing packages: ${missing[*]} (run as root to install them)"
  apt_update
  say "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || unavailable "apt-get install ${missing[*]} failed (no network to the package registry?)"
fi
for c in qemu-system-x86_64 depmod modprobe cpio gzip dpkg; do
  command -v "$c" >/dev/null || unavailable "$c not found after installing packages"
done
busybox=/bin/busybox
[[ -x $busybox ]] || unavailable "$busybox (busybox-static) not found"
if ldd "$busybox" >/dev/null 2>&1; then
  unavailable "$busybox is dynamically linked; the initramfs needs busybox-static"
fi

mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
exec 9>"$workdir/.lock"
flock 9 # one prepare at a time per WORKDIR

# --- 2. the kernel --------------------------------------------------------------------------
kernel_stamp=$workdir/kernel.stamp
targets_key="targets=${MODULE_TARGETS[*]}"
if [[ ${SOFTROCE_REFRESH:-0} == 1 ]]; then
  rm -f "$kernel_stamp"
  rm -rf "$workdir/dl"
fi
deb=
if [[ -f $kernel_stamp ]]; then
  deb=$(sed -n 's/^deb=//p' "$kernel_stamp")
fi
if [[ -n $deb && -f $workdir/dl/$deb && -f $kernel_stamp ]] \
  && grep -qxF "$targets_key" "$kernel_stamp"; then
  say "kernel: cached ($deb)"
else
  shopt -s nullglob
  debs=("$workdir"/dl/linux-image-*.deb)
  shopt -u nullglob
  if ((${#debs[@]} == 0)); then
    pkg_of() { apt-cache depends linux-image-amd64 2>/dev/null \
      | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n 1; }
    pkg=$(pkg_of)
    if [[ -z $pkg ]] && is_root; then
      apt_update
      pkg=$(pkg_of)
    fi
    [[ -n $pkg ]] || unavailable "apt-cache knows no linux-image-amd64 (run apt-get update as root)"
    mkdir -p "$workdir/dl.tmp"
    say "apt-get download $pkg"
    t_dl=$(now)
    sandbox=()
    is_root && sandbox=(-o APT::Sandbox::User=root)
    (cd "$workdir/dl.tmp" && apt-get download -qq "${sandbox[@]}" "$pkg") \
      || unavailable "apt-get download $pkg failed (no network to the package registry?)"
    rm -rf "$workdir/dl"
    mv "$workdir/dl.tmp" "$workdir/dl"
    say "downloaded in $(elapsed "$t_dl") s"
    debs=("$workdir"/dl/linux-image-*.deb)
  fi
  ((${#debs[@]} == 1)) || die "expected one kernel package in $workdir/dl, found ${#debs[@]}"
  deb=$(basename "${debs[0]}")

  say "unpacking $deb"
  tree=$workdir/unpacked
  rm -rf "$tree" "$workdir/modules.tmp"
  dpkg -x "$workdir/dl/$deb" "$tree"
  kvers=("$tree"/lib/modules/*)
  ((${#kvers[@]} == 1)) || die "expected one kernel version in $deb"
  kver=$(basename "${kvers[0]}")
  depmod -b "$tree" "$kver"

  mkdir -p "$workdir/modules.tmp"
  order=()
  for target in "${MODULE_TARGETS[@]}"; do
    deps=$(modprobe -d "$tree" -S "$kver" --show-depends "$target") \
      || die "modprobe cannot resolve $target in $deb"
    while read -r kind path _; do
      [[ $kind == insmod ]] || continue # "builtin NAME": nothing to load
      file=$(basename "$path")
      name=${file%%.ko*}
      [[ " ${order[*]} " == *" $name "* ]] && continue
      case $file in
        *.ko) cp "$path" "$workdir/modules.tmp/$name.ko" ;;
        *.ko.xz) xz -dc "$path" > "$workdir/modules.tmp/$name.ko" ;;
        *.ko.zst) zstd -qdc "$path" > "$workdir/modules.tmp/$name.ko" ;;
        *.ko.gz) gzip -dc "$path" > "$workdir/modules.tmp/$name.ko" ;;
        *) die "unknown module file $file" ;;
      esac
      order+=("$name")
    done <<< "$deps"
  done
  printf '%s\n' "${order[@]}" > "$workdir/modules.tmp/order"
  cp "$tree/boot/vmlinuz-$kver" "$workdir/modules.tmp/vmlinuz"
  rm -rf "$workdir/modules" "$tree"
  mv "$workdir/modules.tmp" "$workdir/modules"
  printf 'deb=%s\nkver=%s\n%s\n' "$deb" "$kver" "$targets_key" > "$kernel_stamp"
  say "kernel $kver; modules: ${order[*]}"
fi
kver=$(sed -n 's/^kver=//p' "$kernel_stamp")

# --- 3. the initramfs -----------------------------------------------------------------------
initrd_key=$(cat "$kernel_stamp" "$here/guest-init.sh" "$workdir/modules/order" "$busybox" \
  | sha256sum | cut -d' ' -f1)
initrd_stamp=$workdir/initrd.stamp
if [[ -f $workdir/initrd.gz && -f $initrd_stamp && $(cat "$initrd_stamp") == "$initrd_key" ]]; then
  say "initramfs: cached"
else
  stage=$workdir/initrd.d
  rm -rf "$stage"
  mkdir -p "$stage"/{bin,dev,proc,sys,host,lib/modules}
  cp "$busybox" "$stage/bin/busybox"
  cp "$here/guest-init.sh" "$stage/init"
  chmod 755 "$stage/init" "$stage/bin/busybox"
  cp "$workdir/modules/order" "$workdir"/modules/*.ko "$stage/lib/modules/"
  (cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet | gzip -6 -n) \
    > "$workdir/initrd.gz.tmp"
  mv "$workdir/initrd.gz.tmp" "$workdir/initrd.gz"
  rm -rf "$stage"
  printf '%s\n' "$initrd_key" > "$initrd_stamp"
  say "initramfs: built ($(du -k "$workdir/initrd.gz" | cut -f1) KiB)"
fi

# --- 4. what run.sh reads -------------------------------------------------------------------
{
  printf 'KVER=%s\n' "$kver"
  printf 'KERNEL=%s\n' "$workdir/modules/vmlinuz"
  printf 'INITRD=%s\n' "$workdir/initrd.gz"
} > "$workdir/softroce.env"
say "ready in $(elapsed "$t_start") s: $workdir/softroce.env (kernel $kver)"
