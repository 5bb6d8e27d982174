//! MoE routing as a Phobos kernel launched through its typed handle
//! (`route.ph`): the batch's probability rows in, each token's experts and
//! weights out. On the host the handle's body is the engine's routing
//! ([`route_probs`], `@host_impl`); `launch_generated` runs the kernel's own
//! code (equal bit for bit, compared in the tests), which is what the GPU
//! runs.

use phobos::{Device, Tensor};

use super::{Routing, route_probs};
use crate::ops::rows::{Body, RowOpError};

phobos::kernel_file!("src/ops/moe/route.ph");

/// The `routing.n_expert_used` experts and weights of every
/// `n_expert`-wide row of `probs` (the router's softmax), largest first.
pub fn route_rows(
    probs: &[f32],
    n_expert: usize,
    routing: &Routing,
    body: Body,
) -> Result<Vec<Vec<(usize, f32)>>, RowOpError> {
    let failed = |source| RowOpError {
        op: "route",
        source: Box::new(source),
    };
    let k = routing.n_expert_used.min(n_expert);
    if n_expert == 0 || probs.is_empty() || k == 0 {
        return Ok(vec![
            Vec::new();
            probs.len().checked_div(n_expert).unwrap_or(0)
        ]);
    }
    let rows = probs.len() / n_expert;
    if rows * n_expert != probs.len() {
        return Err(failed(phobos::Error::LenMismatch {
            shape: vec![rows, n_expert],
            expected: rows * n_expert,
            actual: probs.len(),
        }));
    }
    if i32::try_from(n_expert).is_err() {
        return Err(failed(phobos::Error::BadShape {
            op: "route",
            shape: vec![n_expert],
            expected: "at most i32::MAX experts",
        }));
    }
    let mut ids = vec![0i32; rows * k];
    let mut weights = vec![0f32; rows * k];
    let normalize = i32::from(routing.normalize);
    let scale = routing.scale;
    let device = Device::host();
    device
        .with_borrowed(
            probs,
            [rows, n_expert],
            &mut weights,
            [rows, k],
            |pt, wt| {
                device.with_borrowed_write(&mut ids, [rows, k], |it| match body {
                    Body::Launch => route::launch(&device, pt, it, wt, normalize, scale),
                    Body::Generated => route::launch_generated(
                        &device,
                        &route::Config::default(),
                        pt,
                        it,
                        wt,
                        normalize,
                        scale,
                    ),
                })
            },
        )
        .and_then(|r| r)
        .and_then(|r| r)
        .map_err(failed)?;
    Ok(ids
        .chunks(k)
        .zip(weights.chunks(k))
        .map(|(ids, ws)| {
            ids.iter()
                .zip(ws)
                .map(|(&e, &w)| (usize::try_from(e).unwrap_or(usize::MAX), w))
                .collect()
        })
        .collect())
}

/// `route`'s `@host_impl`: [`route_probs`] on each row.
fn route_host(
    _device: &Device,
    p: &Tensor<f32>,
    ids: &mut Tensor<i32>,
    w: &mut Tensor<f32>,
    normalize: i32,
    scale: f32,
) -> phobos::Result<()> {
    let n_expert = p.shape().get(1).copied().unwrap_or(0);
    let k = ids.shape().get(1).copied().unwrap_or(0);
    let routing = Routing {
        n_expert_used: k,
        normalize: normalize != 0,
        scale,
    };
    let chosen: Vec<Vec<(usize, f32)>> = phobos::host::with_host_slice(p, |p| {
        p.chunks(n_expert.max(1))
            .map(|row| route_probs(row, &routing))
            .collect()
    })?;
    phobos::host::with_host_slice_mut(ids, |ids| {
        for (out, row) in ids.chunks_mut(k.max(1)).zip(&chosen) {
            for (o, &(e, _)) in out.iter_mut().zip(row) {
                // Below E, which the launcher checked fits an i32.
                *o = i32::try_from(e).unwrap_or(i32::MAX);
            }
        }
    })?;
    phobos::host::with_host_slice_mut(w, |w| {
        for (out, row) in w.chunks_mut(k.max(1)).zip(&chosen) {
            for (o, &(_, weight)) in out.iter_mut().zip(row) {
                *o = weight;
            }
        }
    })
}

#[cfg(test)]
#[path = "route_tests.rs"]
mod tests;
