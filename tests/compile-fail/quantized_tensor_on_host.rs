// The checker accepts quantized tensors, but the host back end cannot run
// them yet: the error points at the parameter.
phobos::kernel! {
    kernel matvec(W: tensor<q8_0>[N, 32], x: tensor<f32>[32, 1], y: tensor<f32>[N, 1]) {
        let w = W[0 :+ 4, 0 :+ 32]
        y[0 :+ 4, :] = dot(w, x[:, :])
    }
}

fn main() {}
