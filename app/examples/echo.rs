//! An echo over xrdma on the simulator: a server answers each message with its bytes, a
//! client makes calls of every size from 64 B to 1 MiB and checks each reply. Run it with
//! `cargo run --release -p xrdma-app --example echo`.

use xrdma_app::{AppError, Bytes, Config, SimConfig, Span, Worker};

fn main() -> Result<(), AppError> {
    let mut hosts = Worker::simulated(SimConfig::default(), &Config::default())?;
    let (mut server, mut client) = (hosts.remove(0), hosts.remove(0));
    server.serve(|_conn, msg: Bytes| Some(msg));
    let conn = client.connect(&server)?;
    for size in [64, 4096, 65_536, 1 << 20] {
        let request: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let start = client.now();
        let reply = client.call(conn, request.clone(), Span::from_ms(10))?;
        assert_eq!(reply, request, "the echo of {size} B");
        let rtt = client.now().saturating_since(start);
        println!("{size:>8} B: round trip {rtt}");
    }
    client.flush(Span::from_ms(10))
}
