// Shifts take integers only (SPEC.md §6).
phobos::kernel! {
    kernel bad(x: tensor<f32>[4], out: tensor<f32>[4]) {
        out[0 :+ 4] = x[0 :+ 4] << 1
    }
}

fn main() {}
