//! A short soak on the simulator (`xrdma soak` runs the long one): every streamed message
//! arrives intact and in order, and close/connect cycles through the QP cache create no QP,
//! register no memory, keep no buffers and no connection records beyond what the first cycle
//! had.

use xrdma_tools::soak;

#[test]
fn streaming_and_reconnecting_loses_nothing_and_leaks_nothing() {
    let opts = soak::SoakOptions {
        messages: 20_000,
        cycles: 200,
        ..soak::SoakOptions::default()
    };
    let r = soak::run(&mut xrdma_tools::sim_fabric().unwrap(), &opts).unwrap();
    assert!(r.passed(), "{}\n{:?}", r.lines().join("\n"), r.growth());
    for h in 0..2 {
        // One QP per side, ever; the rest came from the cache; one 4 MiB MR.
        assert_eq!(r.after[h].qps_created, 1);
        assert_eq!(r.after[h].qps_reused, 200);
        assert_eq!(r.after[h].mr_chunks, 1);
        assert_eq!(r.after[h].open_connections, 1);
        // Each cycle's connection takes the slot of the one it replaces.
        assert_eq!(r.after[h].connection_records, 1, "host {h}");
    }
}

#[test]
fn regression_growing_connection_records_fail_the_soak() {
    let opts = soak::SoakOptions {
        messages: 10,
        cycles: 3,
        ..soak::SoakOptions::default()
    };
    let mut r = soak::run(&mut xrdma_tools::sim_fabric().unwrap(), &opts).unwrap();
    assert!(r.passed(), "{:?}", r.growth());
    // A record per cycle, as when connection ids were never reused.
    r.after[1].connection_records = r.before[1].connection_records + 2;
    assert!(!r.passed());
    assert_eq!(r.growth(), ["host 1: connection records 1 -> 3"]);
}
