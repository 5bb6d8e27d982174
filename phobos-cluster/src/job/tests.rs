use super::*;

fn parse(text: &str) -> Result<Job, JobError> {
    Job::parse("job.txt", text, Path::new("/jobs"))
}

#[test]
fn parses_the_original_format() {
    let job = parse(
        "# gemm\nsource = gemm.ph\ndim M = 16\n\ntensor A = read  f32 16x8 file:///data/A.bin\n\
         tensor C = rmw f32 16x4 file://C.bin   # relative\nscalar alpha = f32 0.125\nscalar n = i32 -3\n",
    )
    .unwrap();
    assert_eq!(job.source, PathBuf::from("/jobs/gemm.ph"));
    assert_eq!(job.dims, vec![("M".to_string(), 16, 3)]);
    assert_eq!(job.tensors[0].shape, vec![16, 8]);
    assert_eq!(job.tensors[0].path, PathBuf::from("/data/A.bin"));
    assert_eq!(job.tensors[1].path, PathBuf::from("/jobs/C.bin"));
    assert_eq!(job.tensors[1].access, Access::ReadModifyWrite);
    assert_eq!(job.scalars[0].value, ScalarValue::Float(0.125));
    assert_eq!(job.scalars[1].value, ScalarValue::Int(-3));
}

#[test]
fn every_error_names_its_line() {
    let cases = [
        ("source = k.ph\nbogus line\n", 2, "KEY = VALUE"),
        ("source = k.ph\ndim M = -1\n", 2, "positive"),
        (
            "source = k.ph\ntensor A = read f33 4x4 file://a\n",
            2,
            "unknown dtype `f33`",
        ),
        (
            "source = k.ph\ntensor A = maybe f32 4x4 file://a\n",
            2,
            "unknown access",
        ),
        (
            "source = k.ph\ntensor A = read f32 4x0 file://a\n",
            2,
            "bad shape",
        ),
        (
            "source = k.ph\ntensor A = read f32 4x4 http://a\n",
            2,
            "file://",
        ),
        (
            "source = k.ph\ntensor A = read f32 4x4\n",
            2,
            "expected `tensor A",
        ),
        ("source = k.ph\nscalar a = i8 300\n", 2, "out of range"),
        ("source = k.ph\nscalar a = f32 abc\n", 2, "not a valid f32"),
        (
            "source = k.ph\ndim M = 3\ndim M = 4\n",
            3,
            "already declared on line 2",
        ),
        ("source = a.ph\nsource = b.ph\n", 2, "already given"),
        ("source = k.ph\nkernel x = 1\n", 2, "unknown declaration"),
        ("tensor C = write f32 4 file://c\n", 0, "no `source"),
        (
            "source = k.ph\ntensor A = read f32 4 file://a\n",
            0,
            "no output tensor",
        ),
    ];
    for (text, line, needle) in cases {
        let err = parse(text).unwrap_err();
        assert_eq!(err.line, line, "{text:?}: {err}");
        assert!(err.to_string().contains(needle), "{text:?}: {err}");
        assert!(
            err.to_string().starts_with(&format!("job.txt:{line}:")),
            "{err}"
        );
    }
}
