#!/bin/sh
# SPDX-License-Identifier: MIT
# Becomes PID 1 of a throwaway container: run by `unshare --pid --fork
# --mount --net --uts --ipc --cgroup` (container.py), it builds a root out of
# the host's own / under a tmpfs overlay, then execs systemd. Everything
# mounted here lives in the new mount namespace and goes away with it.
# $1: an empty directory to mount the tmpfs on.
set -eu
scratch=$1
root=$scratch/root

mount --make-rprivate /
# The upper layer on a tmpfs: nothing the container writes reaches the disk,
# and the host's / stays a plain lower layer.
mount -t tmpfs -o mode=700,size=512m ssc-scratch "$scratch"
mkdir "$scratch/upper" "$scratch/work" "$root"
mount -t overlay ssc-root -o "lowerdir=/,upperdir=$scratch/upper,workdir=$scratch/work" "$root"

mount -t proc proc "$root/proc"
# The kernel's global knobs stay the host's: systemd-sysctl and friends see
# read-only files and leave them alone.
for p in sys sysrq-trigger; do
	[ -e "$root/proc/$p" ] || continue
	mount --bind "$root/proc/$p" "$root/proc/$p"
	mount -o remount,bind,ro "$root/proc/$p"
done
mount -t sysfs -o ro sysfs "$root/sys"
# Our own cgroup (the namespace's root) as the unified hierarchy systemd runs.
mount -t cgroup2 cgroup2 "$root/sys/fs/cgroup"

mount -t tmpfs -o mode=755,size=4m ssc-dev "$root/dev"
for d in null zero full random urandom tty; do
	touch "$root/dev/$d"
	mount --bind "/dev/$d" "$root/dev/$d"
done
mkdir "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
mount -t tmpfs ssc-shm "$root/dev/shm"
mount -t tmpfs -o mode=755 ssc-run "$root/run"
mount -t tmpfs ssc-tmp "$root/tmp"

mkdir "$root/.oldroot"
cd "$root"
pivot_root . .oldroot
umount -l /.oldroot
rmdir /.oldroot
# systemd leaves propagation to a container manager; it needs "shared" to
# hand mounts made in a unit's namespace back to its own (credentials). These
# peer groups are new, so nothing propagates to the host.
mount --make-rshared /

# Without the capabilities that reach past the namespaces, a unit in the
# container cannot load modules, set the clock or touch raw I/O of the host.
# sysinit.target: journald and the basics, none of the host's timers or
# services (a service of ours pulls nothing more).
exec env -i container=shadowsocks-c-test \
	/usr/bin/setpriv --bounding-set -sys_module,-sys_time,-sys_rawio,-mac_admin,-mac_override,-syslog,-wake_alarm,-block_suspend \
	/lib/systemd/systemd --system --unit=sysinit.target
