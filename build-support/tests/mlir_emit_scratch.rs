use phobos_build::{Source, back::mlir, check_source};

#[test]
fn scratch_emit_examples() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/kernels");
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let module = match check_source(&Source::file(path.display().to_string(), text)) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{}: front end error {e:?}", path.display());
                continue;
            }
        };
        for k in &module.kernels {
            let cfg = k.default_config();
            match mlir::emit_mlir(k, &cfg, "sm_80", 32) {
                Ok(e) => {
                    std::fs::write(format!("/tmp/mlirproto/{}.mlir", k.name), &e.mlir).unwrap();
                    eprintln!(
                        "{}: ok threads {} smem {}",
                        k.name, e.threads, e.shared_bytes
                    )
                }
                Err(e) => eprintln!("{}: {e}", k.name),
            }
        }
    }
}
