//! Workers on an RDMA device (rxe0 in the Soft-RoCE guest), connected by address: each test
//! prints `SKIP <test>: <reason>` where no device can be opened (a build without the verbs
//! backend, or a machine without a device).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use xrdma_app::{AppError, Bytes, Config, Polling, Span, Worker};

/// A worker on the device, or why the test skips.
fn device_or_skip(test: &str) -> Option<Worker<xrdma_app::VerbsFabric>> {
    match Worker::on_device(&Config::default()) {
        Ok(w) => Some(w),
        Err(e) => {
            eprintln!("SKIP {test}: no usable RDMA device ({e})");
            None
        }
    }
}

#[test]
fn workers_of_two_threads_connect_by_address_and_make_calls_of_every_size() {
    let test = "workers_of_two_threads_connect_by_address_and_make_calls_of_every_size";
    let Some(mut client) = device_or_skip(test) else {
        return;
    };
    let stop = Arc::new(AtomicBool::new(false));
    let stop_server = Arc::clone(&stop);
    let (tell, told) = std::sync::mpsc::channel();
    // A worker stays on the thread that made it: the server's is made in its thread.
    let serving = std::thread::spawn(move || {
        let mut server = Worker::on_device(&Config::default())?;
        let addr = server.listen(([127, 0, 0, 1], 0).into())?;
        server.serve(|_c, m: Bytes| Some(m.iter().rev().copied().collect::<Vec<u8>>().into()));
        let _ = tell.send(addr);
        while !stop_server.load(Ordering::Relaxed) {
            server.run_for(Span::from_ms(20))?;
        }
        Ok::<u64, AppError>(server.refused())
    });
    let addr = told.recv().expect("the server's address");
    let conn = client
        .connect_addr(addr, Span::from_ms(10_000))
        .expect("connects by address");
    for size in [1usize, 64, 4096, 4097, 65_536, 1 << 20] {
        let req: Vec<u8> = (0..size).map(|i| (i % 253) as u8).collect();
        let reply = client
            .call(conn, req.clone(), Span::from_ms(10_000))
            .unwrap_or_else(|e| panic!("{size} B: {e}"));
        let want: Vec<u8> = req.iter().rev().copied().collect();
        assert!(
            reply == want,
            "{size} B: the reply is not the reversed request"
        );
    }
    client.flush(Span::from_ms(5_000)).expect("ACKed");
    stop.store(true, Ordering::Relaxed);
    let refused = serving.join().expect("the server thread").expect("served");
    assert_eq!(refused, 0);
}

#[test]
fn connecting_to_an_address_nobody_listens_on_is_a_setup_error_by_its_timeout() {
    let test = "connecting_to_an_address_nobody_listens_on_is_a_setup_error_by_its_timeout";
    let Some(mut client) = device_or_skip(test) else {
        return;
    };
    let e = client
        .connect_addr(([127, 0, 0, 1], 9).into(), Span::from_ms(300))
        .unwrap_err();
    assert!(matches!(e, AppError::Setup(_)), "{e}");
}

#[test]
fn an_idle_worker_sleeps_on_its_completion_channel_instead_of_spinning() {
    let test = "an_idle_worker_sleeps_on_its_completion_channel_instead_of_spinning";
    let Some(mut w) = device_or_skip(test) else {
        return;
    };
    w.run_for(Span::from_ms(300)).expect("idle");
    let s = w.polling_stats().expect("hybrid polling by default");
    assert_eq!(s.failed, None);
    // Busy polling runs a round every few µs (tens of thousands in 300 ms); the hybrid loop
    // spins 100 µs, then blocks until its deadline, at most 100 ms at a time.
    assert!(s.blocks >= 2, "{s:?}");
    assert!(s.rounds < 5_000, "{s:?}");
    w.set_polling(Polling::Busy);
    assert_eq!(w.polling_stats(), None);
}
