//! `sim.host` end to end: the host model reaches the simulator, slows every message by the
//! hosts' costs, and is recorded in the result; the ideal host changes nothing.

use std::path::Path;
use xrdma_reports::RunResult;
use xrdma_runner::request::run_sim;
use xrdma_sim::HostModel;

const BASE: &str = "name: host\nworkload:\n  incast: { senders: 4, receiver: 0, messages: \
                    [ { size: 4KiB, count: 4 }, { size: 64KiB } ] }\n";

fn run(sim: &str) -> RunResult {
    let text = format!("{BASE}sim: {{ pfc: {{}}, sample-interval: off{sim} }}\n");
    let sc = xrdma_scenario::parse(&text, Path::new("host.yaml")).expect("parses");
    let r = run_sim(&sc).expect("runs");
    assert_eq!((r.delivery.delivered, r.delivery.missing), (20, 0));
    r
}

fn latencies(r: &RunResult) -> Vec<u64> {
    r.messages.iter().filter_map(|m| m.latency_ps()).collect()
}

#[test]
fn the_ideal_host_is_the_default_and_is_not_recorded() {
    let default = run("");
    let ideal = run(", host: ideal");
    // connectx6 with every cost overridden to zero.
    let zeros: Vec<String> = HostModel::COST_KEYS
        .iter()
        .map(|k| format!("{k}: 0ns"))
        .collect();
    let zero = run(&format!(
        ", host: {{ profile: connectx6, {} }}",
        zeros.join(", ")
    ));
    for r in [&ideal, &zero] {
        let (a, b) = (r.sim.as_ref().unwrap(), default.sim.as_ref().unwrap());
        assert_eq!(a.trace_hash, b.trace_hash);
        assert_eq!(a.host_model, None);
        assert_eq!(latencies(r), latencies(&default));
    }
    let v = serde_json::to_value(&default).unwrap();
    assert!(v["sim"].get("host-model").is_none());
}

#[test]
fn a_host_profile_slows_every_message_and_is_recorded_with_its_costs() {
    let ideal = run("");
    let cx6 = run(", host: { profile: connectx6, doorbell: 150ns }");
    let rxe = run(", host: rxe-guest");
    let info = cx6.sim.as_ref().unwrap().host_model.as_ref().unwrap();
    assert_eq!(info.profile, "connectx6");
    assert_eq!(info.overridden, vec!["doorbell".to_string()]);
    let mut want = HostModel::from_profile("connectx6").unwrap();
    want.set_cost("doorbell", xrdma::Span::from_ns(150))
        .unwrap();
    assert_eq!(info.costs_ps.len(), HostModel::COST_KEYS.len());
    for (key, cost) in want.costs() {
        assert_eq!(info.costs_ps[key], cost.as_ps(), "{key}");
    }
    assert_eq!(info.costs_ps["doorbell"], 150_000);
    let v = serde_json::to_value(&cx6).unwrap();
    assert_eq!(v["sim"]["host-model"]["profile"], "connectx6");
    assert_eq!(v["sim"]["host-model"]["costs-ps"]["payload-read"], 500_000);
    let back: RunResult = serde_json::from_value(v).unwrap();
    assert_eq!(back.sim, cx6.sim);
    // Every message is later than on free hosts; the software host more so.
    let (i, c, x) = (latencies(&ideal), latencies(&cx6), latencies(&rxe));
    for k in 0..i.len() {
        assert!(
            i[k] < c[k] && c[k] < x[k],
            "message {k}: {} {} {}",
            i[k],
            c[k],
            x[k]
        );
    }
    assert_eq!(
        rxe.sim
            .as_ref()
            .unwrap()
            .host_model
            .as_ref()
            .unwrap()
            .overridden,
        Vec::<String>::new()
    );
}

#[test]
fn a_scenario_with_a_host_profile_repeats_bit_for_bit() {
    for host in [", host: connectx6", ", host: rxe-guest"] {
        let (a, b) = (run(host), run(host));
        let (sa, sb) = (a.sim.as_ref().unwrap(), b.sim.as_ref().unwrap());
        assert_eq!(sa.trace_hash, sb.trace_hash, "{host}");
        assert_eq!((sa.events, sa.simulated_ps), (sb.events, sb.simulated_ps));
        assert_eq!(a.messages, b.messages, "{host}");
        // A model that costs something moves events: not the ideal host's trace.
        assert_ne!(sa.trace_hash, run("").sim.unwrap().trace_hash, "{host}");
    }
}

#[test]
fn the_shipped_host_scenarios_are_incast_8_on_each_profile() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let base = xrdma_scenario::load(&dir.join("incast-8.yaml")).expect("loads");
    for profile in ["connectx6", "rxe-guest"] {
        let name = format!("incast-8-{profile}");
        let sc =
            xrdma_scenario::load(&dir.join("host").join(format!("{name}.yaml"))).expect("loads");
        assert_eq!(sc.name, name);
        let sim = sc.sim.clone().expect("a sim block");
        assert_eq!(sim.host, HostModel::from_profile(profile).unwrap());
        // What their comment says: incast-8.yaml but for sim.host.
        let ideal = xrdma_scenario::SimSection {
            host: HostModel::IDEAL,
            ..sim
        };
        assert_eq!(Some(ideal), base.sim, "{name}");
        assert_eq!(
            (&sc.workload, &sc.xrdma, &sc.rc),
            (&base.workload, &base.xrdma, &base.rc)
        );
        let r = run_sim(&sc).expect("runs");
        assert_eq!((r.delivery.delivered, r.delivery.missing), (40, 0));
        let info = r.sim.as_ref().unwrap().host_model.as_ref().unwrap();
        assert_eq!((info.profile.as_str(), info.overridden.len()), (profile, 0));
    }
}
