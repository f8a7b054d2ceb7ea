fn main() {
    let rustc = gpu_builder::toolchain::Rustc::detect().unwrap();
    let s = gpu_builder::sysroot::ensure(&rustc, std::path::Path::new("target/nvptx-sysroot"), &mut |l| eprintln!("{l}")).unwrap();
    println!("{}", s.dir.display());
}
