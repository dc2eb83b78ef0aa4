use super::{parse_stat, pin, PinError, Placement};
use std::path::{Path, PathBuf};

/// A fake `/proc/thread-self`, `/sys/devices/system/cpu` and `/sys/class/infiniband`.
struct Fake(PathBuf);

impl Fake {
    fn new(name: &str) -> Fake {
        let root = std::env::temp_dir().join(format!("placement-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for d in [
            "thread",
            "cpus/cpu0/node0",
            "cpus/cpu5/node1",
            "ib/mlx5_0/device",
        ] {
            std::fs::create_dir_all(root.join(d)).expect("a fake tree");
        }
        Fake(root)
    }
    fn write(&self, path: &str, text: &str) {
        std::fs::write(self.0.join(path), text).expect("a fake file");
    }
    fn read(&self, device: Option<&str>) -> Placement {
        let p = |d: &str| self.0.join(d);
        Placement::read(&p("thread"), &p("cpus"), &p("ib"), device)
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A stat line of thread `tid` named `comm` that last ran on `cpu`.
fn stat_line(tid: u32, comm: &str, cpu: u32) -> String {
    // Fields 3..=38, then the processor (39), then the rest.
    let mid: Vec<String> = (3..39)
        .map(|f| if f == 3 { "R".into() } else { f.to_string() })
        .collect();
    format!("{tid} ({comm}) {} {cpu} 0 0 0 0\n", mid.join(" "))
}

#[test]
fn the_cpu_is_field_39_even_when_the_name_holds_spaces_and_parentheses() {
    assert_eq!(
        parse_stat(&stat_line(4242, "w 1", 7)),
        (Some(4242), Some(7))
    );
    assert_eq!(
        parse_stat(&stat_line(9, "a) (b) 3 4", 5)),
        (Some(9), Some(5))
    );
    assert_eq!(parse_stat("garbage"), (None, None));
    assert_eq!(parse_stat("12 (x) R 1 2"), (Some(12), None));
}

#[test]
fn a_worker_on_the_nics_node_is_near_and_on_the_other_node_far() {
    let f = Fake::new("near-far");
    f.write(
        "thread/status",
        "Name:\tw\nCpus_allowed_list:\t0-3,5\nMems_allowed:\t1\n",
    );
    f.write("ib/mlx5_0/device/numa_node", "1\n");
    f.write("thread/stat", &stat_line(77, "worker", 5));
    let near = f.read(Some("mlx5_0"));
    assert_eq!(
        near,
        Placement {
            tid: Some(77),
            cpu: Some(5),
            cpus_allowed: Some("0-3,5".into()),
            numa_node: Some(1),
            device: Some("mlx5_0".into()),
            device_numa_node: Some(1),
            far_node: Some(false),
        }
    );
    f.write("thread/stat", &stat_line(77, "worker", 0));
    let far = f.read(Some("mlx5_0"));
    assert_eq!((far.numa_node, far.far_node), (Some(0), Some(true)));
}

#[test]
fn what_the_machine_does_not_say_is_unknown_not_zero() {
    let f = Fake::new("unknown");
    f.write("thread/stat", &stat_line(5, "w", 0));
    // A virtual machine's NIC has no NUMA node.
    f.write("ib/mlx5_0/device/numa_node", "-1\n");
    let p = f.read(Some("mlx5_0"));
    assert_eq!(
        (p.numa_node, p.device_numa_node, p.far_node),
        (Some(0), None, None)
    );
    assert_eq!(p.cpus_allowed, None, "no status file");
    // No device (the simulator), and a device sysfs does not list.
    assert_eq!(f.read(None).device, None);
    assert_eq!(f.read(Some("rxe9")).device_numa_node, None);
    // A CPU without a node entry (a kernel without NUMA).
    f.write("thread/stat", &stat_line(5, "w", 3));
    assert_eq!(f.read(None).numa_node, None);
}

#[test]
fn this_thread_reads_itself() {
    let p = Placement::here(None);
    if !Path::new(super::THREAD_SELF).exists() {
        println!("SKIP placement of this thread: no /proc/thread-self");
        return;
    }
    assert!(
        p.tid.is_some() && p.cpu.is_some() && p.cpus_allowed.is_some(),
        "{p:?}"
    );
}

#[test]
fn pinning_moves_the_thread_and_bad_masks_are_refused() {
    assert!(matches!(pin(&[]), Err(PinError::NoCpu)));
    assert!(matches!(
        pin(&[1 << 20]),
        Err(PinError::OutOfRange { cpu, .. }) if cpu == 1 << 20
    ));
    // A thread of its own: the test runner's threads keep their masks.
    let seen = std::thread::spawn(|| {
        let cpu = Placement::here(None).cpu?;
        pin(&[cpu as usize]).expect("the CPU this thread runs on is allowed");
        Some((cpu, Placement::here(None)))
    })
    .join()
    .expect("the pinning thread");
    let Some((cpu, p)) = seen else {
        println!("SKIP pinning: no /proc/thread-self");
        return;
    };
    assert_eq!(p.cpu, Some(cpu));
    assert_eq!(p.cpus_allowed, Some(cpu.to_string()));
}
