// `let` bindings are immutable; `var` is the mutable form.
phobos::kernel! {
    kernel bad(x: tensor<f32>[N]) {
        let total = 0.0
        total = 1.0
        x[0] = total
    }
}

fn main() {}
