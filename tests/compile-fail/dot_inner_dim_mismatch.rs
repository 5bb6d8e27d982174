// dot([16, 8], [4, 16]): the inner dims 8 and 4 differ.
phobos::kernel! {
    kernel bad(a: tensor<f32>[M, K], b: tensor<f32>[K, N], c: tensor<f32>[M, N]) {
        let ta = a[0 :+ 16, 0 :+ 8]
        let tb = b[0 :+ 4, 0 :+ 16]
        c[0 :+ 16, 0 :+ 16] = dot(ta, tb)
    }
}

fn main() {}
