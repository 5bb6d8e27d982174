// `min`/`max` take numbers, even next to a number (SPEC.md §10).
phobos::kernel! {
    kernel bad(x: tensor<bool>[4], y: tensor<f32>[4], out: tensor<f32>[4]) {
        out[0 :+ 4] = min(x[0 :+ 4], y[0 :+ 4])
    }
}

fn main() {}
