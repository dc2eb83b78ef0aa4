//! The `rc:` block: RC QP attributes with their IB encodings, defaults and located errors.

mod common;
use common::*;

#[test]
fn rc_block_is_read_with_defaults_for_what_it_leaves_out() {
    let s = ok(&with(""));
    assert_eq!(s.rc, xrdma::RcParams::default());
    assert_eq!(s.rc_params(), xrdma::RcParams::default());
    let s = ok(&with(
        "rc: { local-ack-timeout: 8, retry-cnt: 3, rnr-retry: 0, min-rnr-timer: 12, path-mtu: 512 }\n",
    ));
    assert_eq!(
        s.rc_params(),
        xrdma::RcParams {
            local_ack_timeout: 8,
            retry_cnt: 3,
            rnr_retry: 0,
            min_rnr_timer: 12,
            path_mtu: 512,
        }
    );
    // A 4 KiB path MTU needs 4 KiB simulated ports.
    let s = ok(&with("rc: { path-mtu: 4KiB }\nsim: { mtu: 4KiB }\n"));
    assert_eq!(s.rc_params().path_mtu, 4096);
}

#[test]
fn rc_block_refuses_values_outside_their_encodings_at_the_key() {
    let e = err(&with("rc:\n  timeout: 14\n"));
    assert!(
        e.starts_with("scenarios/x.yaml:5:3: rc: unknown field `timeout`, expected one of"),
        "{e}"
    );
    let e = err(&with("rc:\n  retry-cnt: 7\n  local-ack-timeout: 32\n"));
    assert!(
        e.starts_with("scenarios/x.yaml:6:3: rc.local-ack-timeout: 32 is not a 5-bit code"),
        "{e}"
    );
    let e = err(&with("rc:\n  rnr-retry: 8\n"));
    assert!(
        e.starts_with("scenarios/x.yaml:5:3: rc.rnr-retry: 8 is above 7"),
        "{e}"
    );
    let e = err(&with("rc:\n  min-rnr-timer: 40\n"));
    assert!(
        e.contains("rc.min-rnr-timer: 40 is not a 5-bit code"),
        "{e}"
    );
    let e = err(&with("rc:\n  retry-cnt: 9\n"));
    assert!(e.contains("rc.retry-cnt: 9 is above 7"), "{e}");
    let e = err(&with("rc:\n  path-mtu: 1500\n"));
    assert!(
        e.starts_with(
            "scenarios/x.yaml:5:3: rc.path-mtu: 1500 bytes is not an InfiniBand path MTU"
        ),
        "{e}"
    );
}

#[test]
fn a_path_mtu_above_the_simulated_ports_is_refused() {
    let e = err(&with("rc: { path-mtu: 2048 }\n"));
    assert!(
        e.starts_with(
            "scenarios/x.yaml:4:1: rc: path-mtu 2048 bytes is above the simulated ports' MTU, \
             `sim.mtu` (its default) = 1024 bytes"
        ),
        "{e}"
    );
    let e = err(&with("sim: { mtu: 512 }\nrc: { path-mtu: 1KiB }\n"));
    assert!(
        e.contains("rc: path-mtu 1024 bytes is above the simulated ports' MTU, `sim.mtu` = 512"),
        "{e}"
    );
    assert!(e.contains("set `sim: { mtu: 1024 }`"), "{e}");
    // Written at its default, 4 KiB, it is still refused: only a path MTU left out is the
    // port's.
    let e = err(&with("rc:\n  retry-cnt: 7\n  path-mtu: 4KiB\n"));
    assert!(
        e.starts_with("scenarios/x.yaml:4:1: rc: path-mtu 4096 bytes is above"),
        "{e}"
    );
    ok(&with("rc:\n  retry-cnt: 7\n"));
    let e = err(&with("rc:\n  path-mtu: 8GiB\n"));
    assert!(e.starts_with("scenarios/x.yaml:5:"), "{e}");
    assert!(
        e.contains("rc.path-mtu: 8589934592 bytes is not an InfiniBand path MTU"),
        "{e}"
    );
    // At or below the ports' MTU both backends apply it.
    ok(&with("rc: { path-mtu: 1KiB }\n"));
    ok(&with("sim: { mtu: 4KiB }\nrc: { path-mtu: 2KiB }\n"));
}

#[test]
fn rc_keys_in_the_sim_block_say_where_they_went() {
    for key in [
        "min-rnr-timer",
        "rnr-retry",
        "local-ack-timeout",
        "retry-cnt",
    ] {
        let e = err(&with(&format!("sim:\n  seed: 3\n  {key}: 1\n")));
        assert!(
            e.starts_with(&format!(
                "scenarios/x.yaml:6:3: sim.{key}: the RC QP attributes moved out of `sim:` to \
                 the top-level `rc:` block"
            )),
            "{e}"
        );
        assert!(e.contains(&format!("write `rc: {{ {key}: ... }}`")), "{e}");
    }
}

#[test]
fn an_unknown_sim_key_is_not_offered_the_rc_keys_sim_refuses() {
    // The list of expected keys offered `rnr-retry` and the other RC attributes, which `sim:`
    // then refused with a pointer to `rc:`.
    let e = err(&with("sim:\n  bogus: 1\n"));
    assert!(
        e.starts_with("scenarios/x.yaml:5:3: sim: unknown field `bogus`, expected one of `seed`"),
        "{e}"
    );
    for key in [
        "min-rnr-timer",
        "rnr-retry",
        "local-ack-timeout",
        "retry-cnt",
    ] {
        assert!(!e.contains(&format!("`{key}`")), "{key} offered: {e}");
    }
    assert!(e.contains("`faults`") && e.ends_with("`capture`"), "{e}");
}
