//! Element types as the array libraries name them, and as DLPack and the array interfaces
//! encode them.

use dlpark::ffi::{DLDataType, DLDataTypeCode};

/// An element type the bindings can hand to kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// The NumPy/torch name (`float32`, `int64`, `bfloat16`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The Rust name, as kernel signatures (and so manifests) write it.
    pub fn rust_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// The type a kernel parameter written as `ty` takes (`f32`, `half::f16`, `usize`, ...).
    pub fn from_rust(ty: &str) -> Option<DType> {
        let last = ty.rsplit("::").next().unwrap_or(ty).trim();
        Some(match last {
            "usize" => DType::U64,
            "isize" => DType::I64,
            "f16" => DType::F16,
            "bf16" => DType::BF16,
            other => *DType::ALL.iter().find(|d| d.rust_name() == other)?,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// The DLPack type of one-lane elements; `None` for vectors and types not listed.
    pub fn from_dlpack(t: DLDataType) -> Option<DType> {
        if t.lanes != 1 {
            return None;
        }
        let code = t.code;
        let bits = t.bits;
        Some(match (code, bits) {
            (c, 8) if c == DLDataTypeCode::BOOL => DType::Bool,
            (c, 8) if c == DLDataTypeCode::UINT => DType::U8,
            (c, 16) if c == DLDataTypeCode::UINT => DType::U16,
            (c, 32) if c == DLDataTypeCode::UINT => DType::U32,
            (c, 64) if c == DLDataTypeCode::UINT => DType::U64,
            (c, 8) if c == DLDataTypeCode::INT => DType::I8,
            (c, 16) if c == DLDataTypeCode::INT => DType::I16,
            (c, 32) if c == DLDataTypeCode::INT => DType::I32,
            (c, 64) if c == DLDataTypeCode::INT => DType::I64,
            (c, 16) if c == DLDataTypeCode::FLOAT => DType::F16,
            (c, 32) if c == DLDataTypeCode::FLOAT => DType::F32,
            (c, 64) if c == DLDataTypeCode::FLOAT => DType::F64,
            (c, 16) if c == DLDataTypeCode::BFLOAT => DType::BF16,
            _ => return None,
        })
    }

    /// The one-lane DLPack type of this element type.
    pub fn to_dlpack(self) -> DLDataType {
        let code = match self {
            DType::Bool => DLDataTypeCode::BOOL,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => DLDataTypeCode::UINT,
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => DLDataTypeCode::INT,
            DType::F16 | DType::F32 | DType::F64 => DLDataTypeCode::FLOAT,
            DType::BF16 => DLDataTypeCode::BFLOAT,
        };
        DLDataType {
            code,
            bits: (self.size() * 8) as u8,
            lanes: 1,
        }
    }

    /// The type of an array interface's `typestr` (`<f4`, `|u1`, ...); bfloat16 has none.
    pub fn from_typestr(s: &str) -> Option<DType> {
        let b = s.as_bytes();
        if b.len() < 3 {
            return None;
        }
        let little = matches!(b[0], b'<' | b'|' | b'=');
        if !little && b[1] != b'b' && b[1] != b'u' && b[1] != b'i' {
            return None; // big-endian multi-byte data
        }
        Some(match &s[1..] {
            "b1" => DType::Bool,
            "u1" => DType::U8,
            "u2" => DType::U16,
            "u4" => DType::U32,
            "u8" => DType::U64,
            "i1" => DType::I8,
            "i2" => DType::I16,
            "i4" => DType::I32,
            "i8" => DType::I64,
            "f2" => DType::F16,
            "f4" => DType::F32,
            "f8" => DType::F64,
            _ => return None,
        })
    }
}
