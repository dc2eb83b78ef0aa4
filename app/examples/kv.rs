//! A key-value store over xrdma RPC on the simulator: the server keeps a map and answers
//! `PUT key value` and `GET key`; the client keeps 64 calls in flight over two connections
//! and matches each reply to its call by id. Run it with
//! `cargo run --release -p xrdma-app --example kv`.

use std::collections::HashMap;
use xrdma_app::{Bytes, Config, SimConfig, Span, Worker};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut hosts = Worker::simulated(SimConfig::default(), &Config::default())?;
    let (mut server, mut client) = (hosts.remove(0), hosts.remove(0));
    let mut map: HashMap<Vec<u8>, Bytes> = HashMap::new();
    server.serve(move |_conn, req: Bytes| {
        let mut words = req.splitn(3, |&b| b == b' ');
        match (words.next(), words.next(), words.next()) {
            (Some(b"PUT"), Some(key), Some(value)) => {
                map.insert(key.to_vec(), req.slice_ref(value));
                Some(Bytes::from_static(b"OK"))
            }
            (Some(b"GET"), Some(key), None) => Some(map.get(key).cloned().unwrap_or_default()),
            _ => Some(Bytes::from_static(b"ERR")),
        }
    });
    let conns = [client.connect(&server)?, client.connect(&server)?];
    let start = client.now();
    let puts: Vec<_> = (0..64)
        .map(|k| client.start_call(conns[k % 2], format!("PUT key{k} value{k}").into_bytes()))
        .collect::<Result<_, _>>()?;
    for call in puts {
        assert_eq!(&client.wait_reply(call, Span::from_ms(10))?[..], b"OK");
    }
    // Every key read back, on the other connection from the one that wrote it.
    let gets: Vec<_> = (0..64)
        .map(|k| client.start_call(conns[(k + 1) % 2], format!("GET key{k}").into_bytes()))
        .collect::<Result<_, _>>()?;
    for (k, call) in gets.into_iter().enumerate().rev() {
        let value = client.wait_reply(call, Span::from_ms(10))?;
        assert_eq!(value, format!("value{k}").as_bytes(), "key{k}");
    }
    let took = client.now().saturating_since(start);
    println!("128 calls (64 PUT, 64 GET) over 2 connections, 64 in flight: {took}");
    Ok(())
}
