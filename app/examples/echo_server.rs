//! An echo server on the RDMA device: answers every message with its bytes.
//!
//! usage: echo_server [ADDRESS (0.0.0.0:18700)]
//! (build with `--features verbs`; `XRDMA_VERBS_DEVICE` names the device)

use std::error::Error;
use xrdma_app::{Bytes, Config, Polling, Span, Worker};

fn main() -> Result<(), Box<dyn Error>> {
    let addr = std::env::args().nth(1).unwrap_or("0.0.0.0:18700".into());
    // Delayed ACKs: each reply carries the ACK of its request, each request that of the last
    // reply. A latency benchmark's server spins, as perftest's does.
    let cfg = Config {
        ack_delay: Span::from_us(50),
        ..Config::default()
    };
    let mut server = Worker::on_device(&cfg)?;
    server.set_polling(Polling::Busy);
    let bound = server.listen(addr.parse()?)?;
    server.serve(|_conn, msg: Bytes| Some(msg));
    println!("echo server on {bound}");
    loop {
        server.run_for(Span::from_ms(1000))?;
    }
}
