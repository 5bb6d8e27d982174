//! The scheduler and pods as real processes over gRPC on loopback: results
//! bit-identical to one process, pods SIGKILLed at several points (before
//! their first compute, after storing some outputs, while streaming a
//! tile to a peer, two one after the other) with the job still completing
//! and the log naming what was recomputed, a stopped (silent) pod found
//! dead by missed heartbeats, a restarted pod rejoining, no survivors, a
//! wrong token, an unreachable scheduler and bad input all failing with a
//! clear error and the outputs untouched; `plan --dot`. Every process is
//! bounded in time.

mod common;

use phobos_cluster::store::{self, Fill};
use phobos_rt::DType;

use common::*;

/// (pods, extra `run` args, chaos spec, what the log must say)
type Case = (
    usize,
    &'static [&'static str],
    Option<&'static str>,
    &'static [&'static str],
);

#[test]
fn pods_match_one_process_and_survive_kills() {
    let d = dir("chaos");
    let expected = reference(&d);
    let cases: &[Case] = &[
        (1, &[], None, &[]),
        (2, &[], None, &[]),
        (4, &[], None, &[]),
        (4, &["--ingest", "home-fetch"], None, &[]),
        // The cost model's plan under a per-node memory bound.
        (2, &["--autotune", "--vram", "60000"], None, &[]),
        // Before its first compute.
        (
            4,
            &[],
            Some("1:0"),
            &[
                "chaos: SIGKILL before its first compute",
                "node1 lost",
                "recomputing from lineage on node",
            ],
        ),
        // After storing some outputs.
        (
            4,
            &[],
            Some("2:1"),
            &[
                "chaos: SIGKILL after storing 1",
                "node2 lost",
                "recomputing from lineage on node",
            ],
        ),
        // Two pods, one after the other.
        (
            4,
            &[],
            Some("0:1;3:0"),
            &[
                "node0 lost",
                "node3 lost",
                "recomputing from lineage on node",
            ],
        ),
        // The home of tiles others fetch dies while streaming one: the
        // fetchers read the store instead (what it had not stored, if
        // anything, is recomputed).
        (
            4,
            &["--ingest", "home-fetch"],
            Some("0:fetch"),
            &[
                "chaos: SIGKILL mid-fetch",
                "node0 lost",
                "from node0 at 127.0.0.1:",
                "retrying it from the store",
            ],
        ),
    ];
    for (i, &(nodes, extra, chaos, says)) in cases.iter().enumerate() {
        let c = format!("C{i}.bin");
        let job = sgemm(&d, &c);
        let nodes_arg = nodes.to_string();
        let mut args = vec![
            "run",
            job.to_str().unwrap(),
            "--nodes",
            &nodes_arg,
            "--heartbeat-ms",
            "1000",
            "--budget",
            "40000",
        ];
        args.extend_from_slice(extra);
        let env: Vec<(&str, &str)> = chaos
            .map(|c| vec![("PHOBOS_CLUSTER_CHAOS", c)])
            .unwrap_or_default();
        let out = run(&args, &env);
        let log = log(&out);
        assert!(out.status.success(), "case {i}: {log}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&c),
            "case {i}: output URI not printed"
        );
        assert!(
            std::fs::read(d.join(&c)).unwrap() == expected,
            "case {i}: output differs\n{log}"
        );
        if chaos.is_none() {
            assert!(!log.contains("recomputing from lineage"), "case {i}: {log}");
        }
        for s in says {
            assert!(log.contains(s), "case {i}: no `{s}` in\n{log}");
        }
        assert!(!store::staging_path(&d.join(&c)).exists());
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn flash_attention_on_1_2_4_pods_matches_one_process() {
    let d = dir("flash");
    let (h, s, t) = (2, 70, 90);
    for (name, rows, seed) in [("Q.bin", s, 1), ("K.bin", t, 2), ("V.bin", t, 3)] {
        store::init_tensor(
            &d.join(name),
            DType::F32,
            &[h, rows, 64],
            Fill::Random { seed },
        )
        .unwrap();
    }
    let job = |o: &str| {
        let text = format!(
            "source = {}/flash_attn_f32.ph\ntensor Q = read f32 {h}x{s}x64 file://Q.bin\n\
             tensor K = read f32 {h}x{t}x64 file://K.bin\ntensor V = read f32 {h}x{t}x64 file://V.bin\n\
             tensor O = write f32 {h}x{s}x64 file://{o}\nscalar scale = f32 0.125\n",
            kernels().display()
        );
        let path = d.join(format!("{o}.job"));
        std::fs::write(&path, text).unwrap();
        path
    };
    let reference = job("Oref.bin");
    let out = run(&["run", reference.to_str().unwrap(), "--in-process"], &[]);
    assert!(out.status.success(), "{}", log(&out));
    let expected = std::fs::read(d.join("Oref.bin")).unwrap();
    for nodes in [1, 2, 4] {
        let o = format!("O{nodes}.bin");
        let pods = job(&o);
        let nodes = nodes.to_string();
        // A budget that cuts the grid into more supertiles than pods.
        let out = run(
            &[
                "run",
                pods.to_str().unwrap(),
                "--nodes",
                &nodes,
                "--budget",
                "200000",
            ],
            &[],
        );
        assert!(out.status.success(), "{}", log(&out));
        assert!(
            std::fs::read(d.join(&o)).unwrap() == expected,
            "{nodes} pods differ"
        );
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_restarted_pod_rejoins_the_running_job() {
    let d = dir("rejoin");
    let expected = reference(&d);
    let job = sgemm(&d, "C.bin");
    let (sched, address) = start_sched(
        &job,
        "tok",
        &[
            "--nodes",
            "1",
            "--budget",
            "40000",
            "--heartbeat-ms",
            "1000",
            "--rejoin-wait-ms",
            "60000",
        ],
    );
    // Dies after storing one supertile; the scheduler waits for a rejoin.
    let first = start_pod(0, &address, "tok", &[("PHOBOS_CLUSTER_CHAOS", "0:1")]);
    let out = finish(first, "the first pod");
    assert!(!out.status.success());
    let second = start_pod(0, &address, "tok", &[]);
    let out = finish(sched, "the scheduler");
    let log = log(&out);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("node0 rejoined the running job"), "{log}");
    assert!(log.contains("recomputing from lineage on node0"), "{log}");
    assert!(finish(second, "the second pod").status.success());
    assert!(std::fs::read(d.join("C.bin")).unwrap() == expected);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_silent_pod_is_declared_dead_by_missed_heartbeats() {
    let d = dir("silent");
    let expected = reference(&d);
    let job = sgemm(&d, "C.bin");
    // Alive but stopped (SIGSTOP): its connection stays open, only the
    // heartbeats (every 200 ms, 4 missed: dead) tell.
    let out = run(
        &[
            "run",
            job.to_str().unwrap(),
            "--nodes",
            "2",
            "--heartbeat-ms",
            "200",
            "--budget",
            "40000",
        ],
        &[("PHOBOS_CLUSTER_CHAOS", "1:stop")],
    );
    let log = log(&out);
    assert!(out.status.success(), "{log}");
    for says in [
        "chaos: SIGSTOP before its first compute",
        "node1 lost: missed heartbeats for 800 ms",
        "recomputing from lineage on node0",
    ] {
        assert!(log.contains(says), "no `{says}` in\n{log}");
    }
    assert!(std::fs::read(d.join("C.bin")).unwrap() == expected);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn no_survivors_is_a_clear_error_and_outputs_stay() {
    let d = dir("allkilled");
    let job = sgemm(&d, "C.bin");
    let before = std::fs::read(d.join("C.bin")).unwrap();
    let out = run(
        &[
            "run",
            job.to_str().unwrap(),
            "--nodes",
            "2",
            "--heartbeat-ms",
            "1000",
        ],
        &[("PHOBOS_CLUSTER_CHAOS", "0:0;1:0")],
    );
    let log = log(&out);
    assert!(!out.status.success());
    assert!(log.contains("no pod survives"), "{log}");
    assert_eq!(std::fs::read(d.join("C.bin")).unwrap(), before);
    assert!(!store::staging_path(&d.join("C.bin")).exists());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_pod_with_a_wrong_token_is_refused_and_logged() {
    let d = dir("token");
    let job = sgemm(&d, "C.bin");
    let before = std::fs::read(d.join("C.bin")).unwrap();
    let (sched, address) = start_sched(&job, "right", &["--join-timeout-ms", "3000"]);
    let pod = finish(start_pod(0, &address, "wrong", &[]), "the pod");
    let pod_log = log(&pod);
    assert!(!pod.status.success());
    assert!(pod_log.contains("refused pod0"), "{pod_log}");
    assert!(
        pod_log.contains("wrong or missing cluster token"),
        "{pod_log}"
    );
    // The scheduler logs the refusal and, with no pod, gives up cleanly.
    let out = finish(sched, "the scheduler");
    let log = log(&out);
    assert!(!out.status.success());
    assert!(
        log.contains("refused a call without the right cluster token"),
        "{log}"
    );
    assert!(log.contains("only 0 of 1 pods joined"), "{log}");
    assert_eq!(std::fs::read(d.join("C.bin")).unwrap(), before);
    assert!(!store::staging_path(&d.join("C.bin")).exists());
    // No token at all is an error before anything starts.
    let out = run(&["sched", "--job", job.to_str().unwrap()], &[]);
    assert!(log_contains(&out, "no cluster token"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_unreachable_scheduler_is_a_clear_error() {
    // A port nothing listens on: bind one, then free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let out = run(
        &[
            "pod",
            "--id",
            "0",
            "--sched",
            &address,
            "--connect-timeout-ms",
            "500",
        ],
        &[("PHOBOS_CLUSTER_TOKEN", "t")],
    );
    assert!(
        log_contains(&out, &format!("cannot reach the scheduler at {address}")),
        "{}",
        log(&out)
    );
}

#[test]
fn bad_input_fails_fast_with_the_outputs_untouched() {
    let d = dir("bad");
    let job = sgemm(&d, "C.bin");
    let before = std::fs::read(d.join("C.bin")).unwrap();
    let text = std::fs::read_to_string(&job).unwrap();
    let cases: &[(&str, String, &str)] = &[
        (
            "malformed",
            text.replace("tensor A = read", "tensor A = reed"),
            ":2:",
        ),
        (
            "unknown parameter",
            format!("{text}scalar gamma = f32 1.0\n"),
            "gamma",
        ),
        (
            "missing input",
            text.replace("file://A.bin", "file://nope.bin"),
            "nope.bin",
        ),
        (
            "short input",
            text.replace("file://A.bin", "file://short.bin"),
            "short.bin",
        ),
        (
            "input longer than declared",
            text.replace("file://A.bin", "file://long.bin"),
            "long.bin",
        ),
        (
            "sizes that disagree with the kernel",
            text.replace("read f32 150x40", "read f32 150x41"),
            "dim `K`",
        ),
        (
            "a shape that is not RxC",
            text.replace("read f32 150x40", "read f32 150xforty"),
            ":2:",
        ),
        (
            "a missing kernel source",
            text.replace("gemm_f32.ph", "no_such_kernel.ph"),
            "no_such_kernel.ph",
        ),
    ];
    std::fs::write(d.join("short.bin"), [0u8; 100]).unwrap();
    std::fs::write(d.join("long.bin"), vec![0u8; 150 * 40 * 4 + 4]).unwrap();
    for (what, job_text, says) in cases {
        let path = d.join("bad.job");
        std::fs::write(&path, job_text).unwrap();
        let out = run(&["run", path.to_str().unwrap(), "--nodes", "2"], &[]);
        assert!(
            log_contains(&out, says),
            "{what}: no `{says}` in\n{}",
            log(&out)
        );
        assert_eq!(std::fs::read(d.join("C.bin")).unwrap(), before, "{what}");
        assert!(!store::staging_path(&d.join("C.bin")).exists(), "{what}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn tensor_and_plan_commands_name_the_problem() {
    let d = dir("cli");
    std::fs::write(
        d.join("bad.job"),
        "source = x.ph\ntensor A = read f32 4x4\n",
    )
    .unwrap();
    let out = run(&["plan", d.join("bad.job").to_str().unwrap()], &[]);
    assert!(log_contains(&out, "bad.job:2:"), "{}", log(&out));
    // Cost-model inputs only mean something to the autotuner.
    let out = run(
        &[
            "plan",
            d.join("bad.job").to_str().unwrap(),
            "--vram",
            "1000",
        ],
        &[],
    );
    assert!(log_contains(&out, "--autotune"), "{}", log(&out));
    // The per-node instruction DAG as Graphviz.
    let job = sgemm(&d, "C.bin");
    let out = run(
        &["plan", job.to_str().unwrap(), "--nodes", "2", "--dot"],
        &[],
    );
    let dot = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", log(&out));
    assert!(
        dot.starts_with("digraph plan {") && dot.contains("cluster_node1") && dot.contains("->"),
        "{dot}"
    );
    let uri = format!("file://{}", d.join("t.bin").display());
    let out = run(
        &[
            "tensor", "init", "--uri", &uri, "--shape", "3x4", "--fill", "iota",
        ],
        &[],
    );
    assert!(out.status.success());
    let out = run(
        &[
            "tensor", "peek", "--uri", &uri, "--shape", "3x4", "--count", "2",
        ],
        &[],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "[0, 0] = 0\n[2, 3] = 11\n"
    );
    let out = run(&["tensor", "peek", "--uri", &uri, "--shape", "4x4"], &[]);
    assert!(log(&out).contains("expected 64 bytes, the file has 48"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_cuda_pod_without_a_usable_gpu_fails_at_start_without_a_panic() {
    // Nothing listens here: a pod that got past the device would fail to
    // reach the scheduler instead, also clearly.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let address = format!("127.0.0.1:{port}");
    let cache = dir("ptx-cache");
    let out = run(
        &[
            "pod",
            "--id",
            "0",
            "--sched",
            &address,
            "--backend",
            "cuda",
            "--ptx-cache",
            cache.to_str().unwrap(),
            "--connect-timeout-ms",
            "500",
        ],
        &[("PHOBOS_CLUSTER_TOKEN", "t")],
    );
    let log = log(&out);
    assert!(!out.status.success());
    assert!(!log.contains("panicked"), "{log}");
    assert!(
        log.contains("--backend cuda: CUDA device 0")
            || log.contains(&format!("cannot reach the scheduler at {address}")),
        "{log}"
    );
    std::fs::remove_dir_all(&cache).unwrap();
}
