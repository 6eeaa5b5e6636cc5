//! The encoder's element-wise steps, GELU, attention's softmax and layer norm, written as loops over
//! whole slices that vectorise: compiled for AVX-512 where the CPU has it (mnemod is built for
//! the baseline x86-64, whose loops vectorise 4 wide), with erf and exp as polynomials rather
//! than libm's calls, which do not vectorise.

use crate::linalg::lane_sum;

/// `$vis fn $name(args)`, running `$portable(args)` compiled for AVX-512 where the CPU has
/// it, and as built (baseline x86-64) elsewhere: one dispatch for every element-wise step.
macro_rules! avx512_where_there {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) => $portable:ident) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx512f") {
                #[target_feature(enable = "avx512f")]
                unsafe fn wide($($arg: $ty),*) {
                    $portable($($arg),*)
                }
                // SAFETY: the CPU has AVX-512F, checked just above.
                return unsafe { wide($($arg),*) };
            }
            $portable($($arg),*)
        }
    };
}

avx512_where_there! {
    /// GELU in place, `0.5·x·(1 + erf(x/√2))` (its share of a batch's time went from ~3.9 %
    /// to 1.4 % with the AVX-512 loop and the rational erf).
    pub(super) fn gelu(xs: &mut [f32]) => gelu_portable
}

#[inline(always)]
fn gelu_portable(xs: &mut [f32]) {
    for x in xs {
        *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
    }
}

avx512_where_there! {
    /// Each row of `scores` (rows `width` long) turned into its softmax in place.
    pub(super) fn softmax_rows(scores: &mut [f32], width: usize) => softmax_portable
}

/// The exponentials in a loop of their own and the sum in lanes: a sum taken in the same
/// loop must add in order, which kept the whole loop scalar.
#[inline(always)]
fn softmax_portable(scores: &mut [f32], width: usize) {
    for row in scores.chunks_exact_mut(width) {
        // The largest in 16 lanes too: f32::max in order is a compare and a blend a value.
        let mut lanes = [f32::NEG_INFINITY; 16];
        for chunk in row.chunks(16) {
            lanes
                .iter_mut()
                .zip(chunk)
                .for_each(|(m, s)| *m = m.max(*s));
        }
        let max = lanes.into_iter().fold(f32::NEG_INFINITY, f32::max);
        row.iter_mut().for_each(|s| *s = exp(*s - max));
        let inverse = 1.0 / lane_sum(width, |i| row[i]);
        row.iter_mut().for_each(|s| *s *= inverse);
    }
}

avx512_where_there! {
    /// `x += residual` where there is one, then each row (`gamma.len()` long)
    /// layer-normalised.
    pub(super) fn layer_norm(
        x: &mut [f32],
        residual: Option<&[f32]>,
        gamma: &[f32],
        beta: &[f32],
        eps: f32
    ) => layer_norm_portable
}

#[inline(always)]
fn layer_norm_portable(
    x: &mut [f32],
    residual: Option<&[f32]>,
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    if let Some(residual) = residual {
        x.iter_mut().zip(residual).for_each(|(v, r)| *v += r);
    }
    let n = gamma.len();
    for row in x.chunks_exact_mut(n) {
        let mean = lane_sum(n, |i| row[i]) / n as f32;
        let var = lane_sum(n, |i| (row[i] - mean) * (row[i] - mean)) / n as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = (*v - mean) * inv * g + b;
        }
    }
}

/// erf as a rational function on [-4, 4] (beyond it erf is ±1 in f32): the approximation
/// Eigen and XLA use, within a few ulps of the exact value and free of branches.
#[allow(clippy::excessive_precision)]
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.72614225801306e-10f32;
    for a in [
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    ] {
        p = p * x2 + a;
    }
    let mut q = -1.45660718464996e-05f32;
    for b in [
        -2.13374055278905e-04,
        -1.68282697438203e-03,
        -7.37332916720468e-03,
        -1.42647390514189e-02,
    ] {
        q = q * x2 + b;
    }
    x * p / q
}

/// Below this e^x is not a normal f32; softmax's arguments (each score less the row's
/// largest) are ≤ 0, and those down here weigh nothing beside the largest's 1.
const EXP_MIN: f32 = -87.33654;

/// e^x for x ≤ 88 as Cephes' expf computes it: x = n·ln 2 + r with |r| ≤ ln 2 / 2, e^r by a
/// polynomial, 2^n put in the exponent's bits; within 3e-7 of libm's (relative, tested), and
/// free of branches and calls. Below [`EXP_MIN`] it gives e^EXP_MIN.
#[allow(clippy::excessive_precision)]
#[inline(always)]
fn exp(x: f32) -> f32 {
    // Adding 1.5·2²³ rounds to the nearest integer and leaves it in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(EXP_MIN, 88.0);
    let shifted = x * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    // ln 2 in two parts, so n·ln 2 is exact in the first.
    let r = x - n * 0.693_359_375 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_15e-4f32;
    for c in [
        1.398_199_950_7e-3,
        8.333_451_907_3e-3,
        4.166_579_589_4e-2,
        1.666_666_545_9e-1,
        5.000_000_120_1e-1,
    ] {
        p = p * r + c;
    }
    let e = p * r * r + r + 1.0;
    let n = shifted.to_bits() as i32 - ROUND.to_bits() as i32;
    e * f32::from_bits(((n + 127) << 23) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_libm_everywhere() {
        let worst = (-60_000..=60_000)
            .map(|i| i as f32 / 10_000.0)
            .map(|x| (erf(x) - libm::erff(x)).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 1e-6, "worst error {worst}");
    }

    #[test]
    fn exp_matches_libm_from_its_floor_to_its_ceiling() {
        let worst = (-873_365..=880_000)
            .map(|i| i as f32 / 10_000.0)
            .map(|x| ((exp(x) - libm::expf(x)) / libm::expf(x)).abs())
            .fold(0.0f32, f32::max);
        assert!(worst < 3e-7, "worst relative error {worst}");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-1000.0), exp(EXP_MIN));
        assert!(exp(EXP_MIN) > 0.0 && exp(EXP_MIN).is_normal());
    }

    #[test]
    fn softmax_rows_are_each_rows_own_distribution() {
        let mut scores = vec![1.0, 2.0, 3.0, -50.0, 0.0, 0.0, 0.0, -200.0];
        softmax_rows(&mut scores, 4);
        let want = |row: &[f64]| -> Vec<f64> {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = row.iter().map(|s| (s - max).exp()).sum();
            row.iter().map(|s| (s - max).exp() / sum).collect()
        };
        let expected = [
            want(&[1.0, 2.0, 3.0, -50.0]),
            want(&[0.0, 0.0, 0.0, -200.0]),
        ];
        for (got, want) in scores.iter().zip(expected.iter().flatten()) {
            assert!((f64::from(*got) - want).abs() < 1e-7, "{got} vs {want}");
        }
        assert!(
            scores[3] >= 0.0 && scores[7] >= 0.0,
            "an underflowing score weighs ≥ 0"
        );
        assert!((scores[4] - 1.0 / 3.0).abs() < 1e-7);
    }
}
