//! Mutual TLS between real processes on loopback, with a throwaway CA made
//! here: a job over TLS on 2 pods (tiles fetched between them too) gives
//! the output of the same job without TLS; a pod whose certificate another
//! CA signed, a pod without TLS, and a pod that does not trust the
//! scheduler's certificate are each refused with a clear error, the
//! scheduler logs the refusals, and nothing hangs (every process runs
//! under a short time bound).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use phobos_cluster::store;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use common::*;

/// Refusals must come quickly: the pods give up on their own.
const REFUSAL_LIMIT: Duration = Duration::from_secs(20);

/// A CA named `name`: its certificate (PEM) and the issuer that signs
/// with its key.
fn new_ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// The files one process is given.
struct Files {
    cert: PathBuf,
    key: PathBuf,
    ca: PathBuf,
}

impl Files {
    fn args(&self) -> Vec<String> {
        vec![
            "--tls-cert".into(),
            self.cert.display().to_string(),
            "--tls-key".into(),
            self.key.display().to_string(),
            "--tls-ca".into(),
            self.ca.display().to_string(),
        ]
    }
}

/// A loopback certificate for `name` signed by `issuer`, written with its
/// key into `dir`, paired with the CA file `ca`.
fn leaf(dir: &Path, name: &str, issuer: &Issuer<'_, KeyPair>, ca: &Path) -> Files {
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, issuer).unwrap();
    let files = Files {
        cert: dir.join(format!("{name}.pem")),
        key: dir.join(format!("{name}.key")),
        ca: ca.to_path_buf(),
    };
    std::fs::write(&files.cert, cert.pem()).unwrap();
    std::fs::write(&files.key, key.serialize_pem()).unwrap();
    files
}

/// The cluster's CA and one certificate signed by it, plus a certificate
/// from a second, unrelated CA.
struct Pki {
    _dir: tempfile::TempDir,
    good: Files,
    /// Signed by another CA, trusting the cluster's.
    foreign: Files,
    /// Signed by another CA and trusting only that one.
    stranger: Files,
}

fn pki() -> Pki {
    let dir = tempfile::TempDir::new().unwrap();
    let (ca_pem, ca) = new_ca("phobos test CA");
    let (other_pem, other) = new_ca("another CA");
    let ca_path = dir.path().join("ca.pem");
    let other_path = dir.path().join("other-ca.pem");
    std::fs::write(&ca_path, ca_pem).unwrap();
    std::fs::write(&other_path, other_pem).unwrap();
    Pki {
        good: leaf(dir.path(), "node", &ca, &ca_path),
        foreign: leaf(dir.path(), "foreign", &other, &ca_path),
        stranger: leaf(dir.path(), "stranger", &other, &other_path),
        _dir: dir,
    }
}

/// `bytes_fetched=N` from the scheduler's closing log line.
fn bytes_fetched(log: &str) -> u64 {
    let at = log
        .rfind("bytes_fetched=")
        .unwrap_or_else(|| panic!("no bytes_fetched in\n{log}"));
    log[at + "bytes_fetched=".len()..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bytes_fetched is not a number in\n{log}"))
}

#[test]
fn a_job_over_mutual_tls_on_2_pods_matches_the_job_without() {
    let d = dir("tls-job");
    let pki = pki();
    let expected = reference(&d);
    // Home-fetch: pods also fetch tiles from each other, over TLS.
    let args = |job: &Path| {
        vec![
            "run".to_string(),
            job.display().to_string(),
            "--nodes".into(),
            "2".into(),
            "--ingest".into(),
            "home-fetch".into(),
            "--budget".into(),
            "40000".into(),
        ]
    };
    let plain_job = sgemm(&d, "Cplain.bin");
    let plain_args = args(&plain_job);
    let plain_refs: Vec<&str> = plain_args.iter().map(String::as_str).collect();
    let plain = run(&plain_refs, &[]);
    assert!(plain.status.success(), "{}", log(&plain));
    assert!(std::fs::read(d.join("Cplain.bin")).unwrap() == expected);

    let tls_job = sgemm(&d, "Ctls.bin");
    let mut tls_args = args(&tls_job);
    tls_args.extend(pki.good.args());
    let tls_refs: Vec<&str> = tls_args.iter().map(String::as_str).collect();
    let out = run(&tls_refs, &[]);
    let tls_log = log(&out);
    assert!(out.status.success(), "{tls_log}");
    assert!(tls_log.contains("tls=true"), "{tls_log}");
    assert!(!tls_log.contains("refused"), "{tls_log}");
    assert!(
        bytes_fetched(&tls_log) > 0,
        "no tile went between pods:\n{tls_log}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Ctls.bin"));
    assert!(
        std::fs::read(d.join("Ctls.bin")).unwrap() == expected,
        "the output over TLS differs"
    );

    // The same files from the environment (`run` hands them on).
    let env_job = sgemm(&d, "Cenv.bin");
    let env_args = args(&env_job);
    let env_refs: Vec<&str> = env_args.iter().map(String::as_str).collect();
    let (cert, key, ca) = (
        pki.good.cert.display().to_string(),
        pki.good.key.display().to_string(),
        pki.good.ca.display().to_string(),
    );
    let out = run(
        &env_refs,
        &[
            ("PHOBOS_CLUSTER_TLS_CERT", &cert),
            ("PHOBOS_CLUSTER_TLS_KEY", &key),
            ("PHOBOS_CLUSTER_TLS_CA", &ca),
        ],
    );
    assert!(out.status.success(), "{}", log(&out));
    assert!(log(&out).contains("tls=true"), "{}", log(&out));
    assert!(std::fs::read(d.join("Cenv.bin")).unwrap() == expected);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn pods_without_a_valid_certificate_are_refused_logged_and_nothing_hangs() {
    let d = dir("tls-refused");
    let pki = pki();
    let job = sgemm(&d, "C.bin");
    let before = std::fs::read(d.join("C.bin")).unwrap();
    let mut sched_args = vec!["--join-timeout-ms".to_string(), "6000".into()];
    sched_args.extend(pki.good.args());
    let sched_refs: Vec<&str> = sched_args.iter().map(String::as_str).collect();
    let (sched, address) = start_sched(&job, "tok", &sched_refs);
    let pod = |files: Option<&Files>| {
        let mut args = vec!["--connect-timeout-ms".to_string(), "3000".into()];
        if let Some(f) = files {
            args.extend(f.args());
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        start_pod_with(0, &address, "tok", &refs, &[])
    };
    // Each (pod, what its error must say).
    let cases = [
        // Its certificate is signed by another CA: the scheduler refuses it.
        (pod(Some(&pki.foreign)), "a foreign certificate", "TLS"),
        // No TLS at all: the scheduler refuses the handshake.
        (pod(None), "no certificate", "TLS"),
        // It does not trust the scheduler's certificate: it refuses itself.
        (
            pod(Some(&pki.stranger)),
            "an untrusting pod",
            "invalid peer certificate",
        ),
    ];
    for (child, what, says) in cases {
        let out = finish_within(child, what, REFUSAL_LIMIT);
        let pod_log = log(&out);
        assert!(!out.status.success(), "{what}: {pod_log}");
        assert!(pod_log.contains(says), "{what}: no `{says}` in\n{pod_log}");
        assert!(!pod_log.contains("panicked"), "{what}: {pod_log}");
    }
    let out = finish_within(sched, "the scheduler", REFUSAL_LIMIT);
    let sched_log = log(&out);
    assert!(!out.status.success());
    assert!(
        sched_log
            .matches("refused a TLS connection from 127.0.0.1:")
            .count()
            >= 2,
        "{sched_log}"
    );
    assert!(sched_log.contains("only 0 of 1 pods joined"), "{sched_log}");
    assert_eq!(std::fs::read(d.join("C.bin")).unwrap(), before);
    assert!(!store::staging_path(&d.join("C.bin")).exists());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn incomplete_or_unreadable_tls_files_are_errors_before_anything_starts() {
    let d = dir("tls-files");
    let pki = pki();
    let job = sgemm(&d, "C.bin");
    let job = job.to_str().unwrap();
    let cert = pki.good.cert.to_str().unwrap();
    let key = pki.good.key.to_str().unwrap();
    let ca = pki.good.ca.to_str().unwrap();
    let foreign_key = pki.foreign.key.to_str().unwrap();
    let missing = d.join("missing.pem");
    let missing = missing.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--tls-cert", cert], "missing: --tls-key, --tls-ca"),
        (
            &["--tls-cert", missing, "--tls-key", key, "--tls-ca", ca],
            "cannot read the TLS certificate",
        ),
        (
            &["--tls-cert", cert, "--tls-key", foreign_key, "--tls-ca", ca],
            "does not go with",
        ),
        (
            &["--tls-cert", cert, "--tls-key", key, "--tls-ca", key],
            "holds no `BEGIN CERTIFICATE` block",
        ),
    ];
    for (tls, says) in cases {
        for head in [
            &["run", job, "--nodes", "1"][..],
            &["sched", "--job", job][..],
        ] {
            let mut args = head.to_vec();
            args.extend_from_slice(tls);
            let out = finish_within(
                command(&args, &[("PHOBOS_CLUSTER_TOKEN", "t")])
                    .spawn()
                    .unwrap(),
                "a bad TLS setup",
                REFUSAL_LIMIT,
            );
            assert!(
                log_contains(&out, says),
                "{args:?}: no `{says}` in\n{}",
                log(&out)
            );
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}
