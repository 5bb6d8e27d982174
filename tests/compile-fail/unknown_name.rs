// A misspelled local: the error lists the close match.
phobos::kernel! {
    kernel scale(x: tensor<f32>[N], y: tensor<f32>[N]) {
        let offset = program_id(0) * 16
        y[offset :+ 16] = x[ofset :+ 16] * 2.0
    }
}

fn main() {}
