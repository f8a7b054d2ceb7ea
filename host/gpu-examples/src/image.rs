//! RGB → grayscale of a PNG image: the classic first CUDA example.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

use gpu_host::{Error, Gpu, LaunchConfig, Result};

use crate::ExampleKernels;
use crate::check::{Comparison, compare};

/// An 8-bit RGB image, pixels interleaved row by row.
#[derive(Debug, Clone, PartialEq)]
pub struct RgbImage {
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

/// A colourful test picture (gradients, rings and stripes), so the example needs no download.
pub fn test_image(width: u32, height: u32) -> RgbImage {
    let mut pixels = Vec::with_capacity(width as usize * height as usize * 3);
    let (cx, cy) = (width as f32 / 2.0, height as f32 / 2.0);
    for y in 0..height {
        for x in 0..width {
            let d = ((x as f32 - cx).powi(2) + (y as f32 - cy).powi(2)).sqrt();
            let ring = ((d / 12.0).sin() * 0.5 + 0.5) * 255.0;
            let r = (x * 255 / width.max(1)) as u8;
            let g = ring as u8;
            let b = if (x / 32 + y / 32) % 2 == 0 {
                (y * 255 / height.max(1)) as u8
            } else {
                255 - r
            };
            pixels.extend_from_slice(&[r, g, b]);
        }
    }
    RgbImage {
        width,
        height,
        pixels,
    }
}

fn png_error(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(what.to_string()),
    }
}

pub fn write_png(
    path: &Path,
    width: u32,
    height: u32,
    color: png::ColorType,
    data: &[u8],
) -> Result<()> {
    let file = File::create(path).map_err(|e| png_error(path, e))?;
    let mut encoder = png::Encoder::new(BufWriter::new(file), width, height);
    encoder.set_color(color);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| png_error(path, e))?;
    writer
        .write_image_data(data)
        .map_err(|e| png_error(path, e))
}

/// Reads an 8-bit RGB or RGBA PNG (alpha is dropped).
pub fn read_png(path: &Path) -> Result<RgbImage> {
    let file = File::open(path).map_err(|e| png_error(path, e))?;
    let mut reader = png::Decoder::new(BufReader::new(file))
        .read_info()
        .map_err(|e| png_error(path, e))?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| png_error(path, "image too large"))?;
    let mut buf = vec![0; size];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| png_error(path, e))?;
    if info.bit_depth != png::BitDepth::Eight {
        return Err(png_error(path, "only 8-bit PNGs are supported"));
    }
    let pixels = match info.color_type {
        png::ColorType::Rgb => buf[..info.buffer_size()].to_vec(),
        png::ColorType::Rgba => buf[..info.buffer_size()]
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
        other => {
            return Err(png_error(
                path,
                format!("expected an RGB or RGBA PNG, found {other:?}"),
            ));
        }
    };
    Ok(RgbImage {
        width: info.width,
        height: info.height,
        pixels,
    })
}

/// Same integer formula as the kernel.
pub fn rgb_to_gray_cpu(rgb: &[u8]) -> Vec<u8> {
    rgb.chunks_exact(3)
        .map(|p| ((77 * p[0] as u32 + 150 * p[1] as u32 + 29 * p[2] as u32 + 128) >> 8) as u8)
        .collect()
}

/// Grayscale on the GPU; returns the luma plane and the kernel time in ms.
pub fn rgb_to_gray(
    gpu: &Gpu,
    kernels: &ExampleKernels,
    image: &RgbImage,
) -> Result<(Vec<u8>, f32)> {
    let pixels = image.width as usize * image.height as usize;
    if image.pixels.len() != pixels * 3 {
        return Err(Error::SizeMismatch {
            operation: "rgb_to_gray input (width * height * 3 bytes)".into(),
            expected: pixels * 3,
            actual: image.pixels.len(),
        });
    }
    let rgb = gpu.to_device(&image.pixels)?;
    let mut gray = gpu.alloc_zeroed::<u8>(pixels)?;
    let config = LaunchConfig::for_elements(pixels, 256);
    let ((), ms) = gpu
        .default_stream()
        .time(|s| kernels.rgb_to_gray(s, config, &rgb, &mut gray))?;
    Ok((gray.to_vec()?, ms))
}

/// Reads `input` (or generates a test picture when `None`, saving it next to `output`),
/// converts it on the GPU, checks against the CPU and writes the grayscale PNG to `output`.
pub fn run(
    gpu: &Gpu,
    kernels: &ExampleKernels,
    input: Option<&Path>,
    output: &Path,
) -> Result<(Comparison, f32, RgbImage)> {
    let image = match input {
        Some(path) => read_png(path)?,
        None => {
            // The CPU simulator gets a smaller picture, to finish in seconds.
            let (width, height) = crate::report::size_for(gpu, (1920, 1080), (640, 360));
            let generated = test_image(width, height);
            let path = output.with_file_name("rgb_input.png");
            write_png(
                &path,
                generated.width,
                generated.height,
                png::ColorType::Rgb,
                &generated.pixels,
            )?;
            read_png(&path)?
        }
    };
    let (gray, ms) = rgb_to_gray(gpu, kernels, &image)?;
    write_png(
        output,
        image.width,
        image.height,
        png::ColorType::Grayscale,
        &gray,
    )?;
    Ok((
        compare(&gray, &rgb_to_gray_cpu(&image.pixels), 0.0, 0.0),
        ms,
        image,
    ))
}
