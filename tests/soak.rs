//! A short soak on the simulator (`xrdma soak` runs the long one): every streamed message
//! arrives intact and in order, and close/connect cycles through the QP cache create no QP,
//! register no memory and keep no buffers beyond what the first cycle had.

use xrdma_testbed::tools::{self, soak};

#[test]
fn streaming_and_reconnecting_loses_nothing_and_leaks_nothing() {
    let opts = soak::SoakOptions {
        messages: 20_000,
        cycles: 200,
        ..soak::SoakOptions::default()
    };
    let r = soak::run(&mut tools::sim_fabric().unwrap(), &opts).unwrap();
    assert!(r.passed(), "{}\n{:?}", r.lines().join("\n"), r.growth());
    for h in 0..2 {
        // One QP per side, ever; the rest came from the cache; one 4 MiB MR.
        assert_eq!(r.after[h].qps_created, 1);
        assert_eq!(r.after[h].qps_reused, 200);
        assert_eq!(r.after[h].mr_chunks, 1);
        assert_eq!(r.after[h].open_connections, 1);
    }
}
