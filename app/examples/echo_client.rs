//! An echo client on the RDMA device: calls the echo server at ADDRESS with messages of
//! 64 B to 1 MiB, checks every reply, and prints each size's median round trip.
//!
//! usage: echo_client ADDRESS [CALLS PER SIZE (100)]
//! (build with `--features verbs`; `XRDMA_VERBS_DEVICE` names the device)

use std::error::Error;
use xrdma_app::{Config, Span, Worker};

fn main() -> Result<(), Box<dyn Error>> {
    let addr = std::env::args()
        .nth(1)
        .ok_or("usage: echo_client ADDRESS [CALLS]")?;
    let calls: usize = std::env::args().nth(2).map_or(Ok(100), |n| n.parse())?;
    if calls == 0 {
        return Err("CALLS must be at least 1".into());
    }
    // Delayed ACKs: the next request carries the ACK of the last reply (no ACK SEND a call).
    let cfg = Config {
        ack_delay: Span::from_us(50),
        ..Config::default()
    };
    let mut client = Worker::on_device(&cfg)?;
    let conn = client.connect_addr(addr.parse()?, Span::from_ms(10_000))?;
    for size in [64, 4096, 65_536, 1 << 20] {
        let request: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let mut rtts = Vec::with_capacity(calls);
        for _ in 0..calls {
            let start = client.now();
            let reply = client.call(conn, request.clone(), Span::from_ms(5_000))?;
            if reply != request {
                return Err(format!("the echo of a {size} B message differs").into());
            }
            rtts.push(client.now().saturating_since(start));
        }
        rtts.sort();
        println!(
            "{size:>8} B: median round trip {} over {calls} calls",
            rtts[calls / 2]
        );
    }
    client.close(conn)?;
    client.flush(Span::from_ms(1_000))?;
    Ok(())
}
