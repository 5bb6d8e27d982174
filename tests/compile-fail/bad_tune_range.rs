// A tune range must run from low to high.
phobos::kernel! {
    @autotune(BLOCK in [256, 16])
    @grid(cdiv(N, BLOCK))
    kernel bad(x: tensor<f32>[N]) {
        x[program_id(0) * BLOCK :+ BLOCK] = 0.0
    }
}

fn main() {}
