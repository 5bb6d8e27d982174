// Arithmetic needs numbers: a bool operand is refused (SPEC.md §6).
phobos::kernel! {
    kernel bad(x: tensor<bool>[4], y: tensor<i32>[4], out: tensor<i32>[4]) {
        out[0 :+ 4] = x[0 :+ 4] + y[0 :+ 4]
    }
}

fn main() {}
