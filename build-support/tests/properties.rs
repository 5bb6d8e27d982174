//! Property tests of the front end: the parser recovers any expression
//! tree from its minimally parenthesized text (so precedence and
//! associativity follow SPEC.md's table), text and macro tokens lex alike,
//! shape expressions survive the IR text, and tune ranges double.

use phobos_build::check::tune_values;
use phobos_build::front::{lex_text, lex_tokens, parse::parse_expr, print::expr_to_string};
use phobos_build::ir::parse::parse_module;
use phobos_build::ir::{Config, ShapeExpr, ShapeOp};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Tree {
    Leaf(String),
    Neg(Box<Tree>),
    Bin(&'static str, Box<Tree>, Box<Tree>),
}

/// SPEC.md §2: operator precedence, loosest first.
const OPS: [(&str, u8); 18] = [
    ("||", 1),
    ("&&", 2),
    ("|", 3),
    ("^", 4),
    ("&", 5),
    ("==", 6),
    ("!=", 6),
    ("<", 7),
    ("<=", 7),
    (">", 7),
    (">=", 7),
    ("<<", 8),
    (">>", 8),
    ("+", 9),
    ("-", 9),
    ("*", 10),
    ("/", 10),
    ("%", 10),
];

fn prec(op: &str) -> u8 {
    OPS.iter().find(|(o, _)| *o == op).map_or(0, |(_, p)| *p)
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = prop_oneof![
        "[a-e]".prop_map(Tree::Leaf),
        (0u32..100).prop_map(|v| Tree::Leaf(v.to_string())),
    ];
    leaf.prop_recursive(5, 40, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| Tree::Neg(Box::new(t))),
            (0..OPS.len(), inner.clone(), inner).prop_map(|(i, l, r)| Tree::Bin(
                OPS[i].0,
                Box::new(l),
                Box::new(r)
            )),
        ]
    })
}

/// Source text with parentheses only where precedence needs them.
fn minimal(t: &Tree) -> String {
    match t {
        Tree::Leaf(s) => s.clone(),
        Tree::Neg(x) => match **x {
            Tree::Bin(..) => format!("-({})", minimal(x)),
            _ => format!("-{}", minimal(x)),
        },
        Tree::Bin(op, l, r) => {
            let p = prec(op);
            let wrap_l = matches!(&**l, Tree::Bin(o, ..) if prec(o) < p);
            let wrap_r = matches!(&**r, Tree::Bin(o, ..) if prec(o) <= p);
            let side = |s: String, wrap: bool| if wrap { format!("({s})") } else { s };
            format!(
                "{} {op} {}",
                side(minimal(l), wrap_l),
                side(minimal(r), wrap_r)
            )
        }
    }
}

/// The AST printer's form: nested binaries parenthesized, `-(...)` kept.
fn canonical(t: &Tree) -> String {
    match t {
        Tree::Leaf(s) => s.clone(),
        Tree::Neg(x) => match **x {
            Tree::Bin(..) => format!("-({})", canonical(x)),
            _ => format!("-{}", canonical(x)),
        },
        Tree::Bin(op, l, r) => {
            let side = |t: &Tree| match t {
                Tree::Bin(..) => format!("({})", canonical(t)),
                _ => canonical(t),
            };
            format!("{} {op} {}", side(l), side(r))
        }
    }
}

fn shape_expr() -> impl Strategy<Value = ShapeExpr> {
    let leaf = prop_oneof![
        (1i64..50).prop_map(ShapeExpr::Lit),
        prop_oneof![Just("A"), Just("B")].prop_map(|n| ShapeExpr::Tune(n.to_string())),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        let ops = prop_oneof![
            Just(ShapeOp::Add),
            Just(ShapeOp::Sub),
            Just(ShapeOp::Mul),
            Just(ShapeOp::Div),
            Just(ShapeOp::Rem),
            Just(ShapeOp::Cdiv),
            Just(ShapeOp::Min),
            Just(ShapeOp::Max),
        ];
        (ops, inner.clone(), inner)
            .prop_map(|(op, a, b)| ShapeExpr::Bin(op, Box::new(a), Box::new(b)))
    })
}

proptest! {
    #[test]
    fn parser_recovers_the_tree(t in tree()) {
        let src = minimal(&t);
        let lexed = lex_text("p.ph", &src).unwrap();
        let parsed = parse_expr(&lexed.tokens).unwrap();
        prop_assert_eq!(expr_to_string(&parsed), canonical(&t), "source: {}", src);
    }

    #[test]
    fn text_and_macro_tokens_lex_alike(t in tree()) {
        let src = format!("let x = {}\nx += 1", minimal(&t));
        let text = lex_text("p.ph", &src).unwrap();
        let tokens = lex_tokens(src.parse().unwrap()).unwrap();
        let kinds = |ts: &[phobos_build::front::Token]| ts.iter().map(|t| t.kind.clone()).collect::<Vec<_>>();
        prop_assert_eq!(kinds(&text.tokens), kinds(&tokens.tokens));
    }

    #[test]
    fn shape_exprs_survive_ir_text(e in shape_expr(), a in 1i64..40, b in 1i64..40) {
        let text = format!(
            "kernel k {{\n  tune A autotune [{a}]\n  tune B autotune [{b}]\n  grid [1:i32]\n  body {{\n    let %x: f32[{e}] = broadcast(0.0:f32):f32[{e}]\n  }}\n}}\n"
        );
        let m = parse_module(&text).unwrap();
        let back = &m.kernels[0].locals[0].shape.0[0];
        prop_assert_eq!(back.to_string(), e.to_string());
        let cfg = Config { values: vec![("A".into(), a), ("B".into(), b)] };
        prop_assert_eq!(back.try_eval(&cfg), e.try_eval(&cfg));
    }

    #[test]
    fn two_tune_values_double(a in 1i64..1000, k in 0u32..8) {
        let values = tune_values(&[a, a << k]).unwrap();
        prop_assert_eq!(values.len() as u32, k + 1);
        prop_assert_eq!(values[0], a);
        for w in values.windows(2) {
            prop_assert_eq!(w[1], 2 * w[0]);
        }
    }

    #[test]
    fn non_doubling_ranges_are_rejected(a in 1i64..1000, b in 1i64..100_000) {
        let doubling = b >= a && b % a == 0 && (b / a).count_ones() == 1;
        prop_assert_eq!(tune_values(&[a, b]).is_ok(), doubling);
    }
}

const VOCAB: [&str; 40] = [
    "kernel",
    "k",
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    ":+",
    ";",
    "\n",
    "@grid",
    "@autotune",
    "T in [16, 64]",
    "X",
    ": tensor<f32>[N]",
    "let",
    "var",
    "x",
    "=",
    "+=",
    "max=",
    "for",
    "in range(0, N, T)",
    "if",
    "else",
    "while",
    "dot(",
    "where(",
    "1",
    "2.5",
    "-",
    "*",
    "<",
    "&&",
    "program_id(0)",
    "X[x :+ T]",
    "tile<f32>[T]",
];

fn example_kernels() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in [root.join("tests/in"), root.join("../examples/kernels")] {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.path().extension().is_some_and(|x| x == "ph") {
                out.push(std::fs::read_to_string(e.path()).unwrap());
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Token soup never panics the front end, and every error points inside
    /// the source.
    #[test]
    fn any_token_soup_gets_a_result(words in proptest::collection::vec(0..VOCAB.len(), 0..60)) {
        let src: String = words.iter().map(|i| VOCAB[*i]).collect::<Vec<_>>().join(" ");
        if let Err(d) = phobos_build::check_source(&phobos_build::Source::file("s.ph", src.clone())) {
            prop_assert!(!d.errors.is_empty());
            for e in &d.errors {
                prop_assert!(e.span.hi as usize <= src.len() && e.span.lo <= e.span.hi, "{:?} in {:?}", e, src);
            }
            prop_assert!(d.render().contains("error:"));
        }
    }

    /// Deleting any slice of a valid kernel never panics the front end.
    #[test]
    fn damaged_kernels_get_a_result(which in 0usize..64, at in 0usize..4000, len in 1usize..40) {
        let kernels = example_kernels();
        let text = &kernels[which % kernels.len()];
        let at = at % text.len();
        let end = (at + len).min(text.len());
        if text.is_char_boundary(at) && text.is_char_boundary(end) {
            let damaged = format!("{}{}", &text[..at], &text[end..]);
            let result = phobos_build::check_source(&phobos_build::Source::file("d.ph", damaged.clone()));
            if let Ok(m) = result {
                prop_assert!(phobos_build::ir::verify(&m).is_ok());
            }
        }
    }
}
