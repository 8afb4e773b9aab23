"""The spec's vector and marray aliases (SYCL 2020 §4.14.2.1, §4.14.3.1) as pysycl names.

``float4`` is ``sycl::float4`` = ``vec<float, 4>``; ``mfloat4`` is ``sycl::mfloat4`` =
``marray<float, 4>``. Element types: ``char`` int8, ``uchar`` uint8, ``short`` int16,
``ushort`` uint16, ``int`` int32, ``uint`` uint32, ``long`` int64, ``ulong`` uint64,
``half`` float16, ``float`` float32, ``double`` float64 (and ``mbool``); sizes 2, 3, 4, 8, 16.
"""

from __future__ import annotations

from pysycl._objects.vec import VEC_ALIASES, vec_type

char2: vec_type = VEC_ALIASES["char2"]
mchar2: vec_type = VEC_ALIASES["mchar2"]
char3: vec_type = VEC_ALIASES["char3"]
mchar3: vec_type = VEC_ALIASES["mchar3"]
char4: vec_type = VEC_ALIASES["char4"]
mchar4: vec_type = VEC_ALIASES["mchar4"]
char8: vec_type = VEC_ALIASES["char8"]
mchar8: vec_type = VEC_ALIASES["mchar8"]
char16: vec_type = VEC_ALIASES["char16"]
mchar16: vec_type = VEC_ALIASES["mchar16"]
uchar2: vec_type = VEC_ALIASES["uchar2"]
muchar2: vec_type = VEC_ALIASES["muchar2"]
uchar3: vec_type = VEC_ALIASES["uchar3"]
muchar3: vec_type = VEC_ALIASES["muchar3"]
uchar4: vec_type = VEC_ALIASES["uchar4"]
muchar4: vec_type = VEC_ALIASES["muchar4"]
uchar8: vec_type = VEC_ALIASES["uchar8"]
muchar8: vec_type = VEC_ALIASES["muchar8"]
uchar16: vec_type = VEC_ALIASES["uchar16"]
muchar16: vec_type = VEC_ALIASES["muchar16"]
short2: vec_type = VEC_ALIASES["short2"]
mshort2: vec_type = VEC_ALIASES["mshort2"]
short3: vec_type = VEC_ALIASES["short3"]
mshort3: vec_type = VEC_ALIASES["mshort3"]
short4: vec_type = VEC_ALIASES["short4"]
mshort4: vec_type = VEC_ALIASES["mshort4"]
short8: vec_type = VEC_ALIASES["short8"]
mshort8: vec_type = VEC_ALIASES["mshort8"]
short16: vec_type = VEC_ALIASES["short16"]
mshort16: vec_type = VEC_ALIASES["mshort16"]
ushort2: vec_type = VEC_ALIASES["ushort2"]
mushort2: vec_type = VEC_ALIASES["mushort2"]
ushort3: vec_type = VEC_ALIASES["ushort3"]
mushort3: vec_type = VEC_ALIASES["mushort3"]
ushort4: vec_type = VEC_ALIASES["ushort4"]
mushort4: vec_type = VEC_ALIASES["mushort4"]
ushort8: vec_type = VEC_ALIASES["ushort8"]
mushort8: vec_type = VEC_ALIASES["mushort8"]
ushort16: vec_type = VEC_ALIASES["ushort16"]
mushort16: vec_type = VEC_ALIASES["mushort16"]
int2: vec_type = VEC_ALIASES["int2"]
mint2: vec_type = VEC_ALIASES["mint2"]
int3: vec_type = VEC_ALIASES["int3"]
mint3: vec_type = VEC_ALIASES["mint3"]
int4: vec_type = VEC_ALIASES["int4"]
mint4: vec_type = VEC_ALIASES["mint4"]
int8: vec_type = VEC_ALIASES["int8"]
mint8: vec_type = VEC_ALIASES["mint8"]
int16: vec_type = VEC_ALIASES["int16"]
mint16: vec_type = VEC_ALIASES["mint16"]
uint2: vec_type = VEC_ALIASES["uint2"]
muint2: vec_type = VEC_ALIASES["muint2"]
uint3: vec_type = VEC_ALIASES["uint3"]
muint3: vec_type = VEC_ALIASES["muint3"]
uint4: vec_type = VEC_ALIASES["uint4"]
muint4: vec_type = VEC_ALIASES["muint4"]
uint8: vec_type = VEC_ALIASES["uint8"]
muint8: vec_type = VEC_ALIASES["muint8"]
uint16: vec_type = VEC_ALIASES["uint16"]
muint16: vec_type = VEC_ALIASES["muint16"]
long2: vec_type = VEC_ALIASES["long2"]
mlong2: vec_type = VEC_ALIASES["mlong2"]
long3: vec_type = VEC_ALIASES["long3"]
mlong3: vec_type = VEC_ALIASES["mlong3"]
long4: vec_type = VEC_ALIASES["long4"]
mlong4: vec_type = VEC_ALIASES["mlong4"]
long8: vec_type = VEC_ALIASES["long8"]
mlong8: vec_type = VEC_ALIASES["mlong8"]
long16: vec_type = VEC_ALIASES["long16"]
mlong16: vec_type = VEC_ALIASES["mlong16"]
ulong2: vec_type = VEC_ALIASES["ulong2"]
mulong2: vec_type = VEC_ALIASES["mulong2"]
ulong3: vec_type = VEC_ALIASES["ulong3"]
mulong3: vec_type = VEC_ALIASES["mulong3"]
ulong4: vec_type = VEC_ALIASES["ulong4"]
mulong4: vec_type = VEC_ALIASES["mulong4"]
ulong8: vec_type = VEC_ALIASES["ulong8"]
mulong8: vec_type = VEC_ALIASES["mulong8"]
ulong16: vec_type = VEC_ALIASES["ulong16"]
mulong16: vec_type = VEC_ALIASES["mulong16"]
half2: vec_type = VEC_ALIASES["half2"]
mhalf2: vec_type = VEC_ALIASES["mhalf2"]
half3: vec_type = VEC_ALIASES["half3"]
mhalf3: vec_type = VEC_ALIASES["mhalf3"]
half4: vec_type = VEC_ALIASES["half4"]
mhalf4: vec_type = VEC_ALIASES["mhalf4"]
half8: vec_type = VEC_ALIASES["half8"]
mhalf8: vec_type = VEC_ALIASES["mhalf8"]
half16: vec_type = VEC_ALIASES["half16"]
mhalf16: vec_type = VEC_ALIASES["mhalf16"]
float2: vec_type = VEC_ALIASES["float2"]
mfloat2: vec_type = VEC_ALIASES["mfloat2"]
float3: vec_type = VEC_ALIASES["float3"]
mfloat3: vec_type = VEC_ALIASES["mfloat3"]
float4: vec_type = VEC_ALIASES["float4"]
mfloat4: vec_type = VEC_ALIASES["mfloat4"]
float8: vec_type = VEC_ALIASES["float8"]
mfloat8: vec_type = VEC_ALIASES["mfloat8"]
float16: vec_type = VEC_ALIASES["float16"]
mfloat16: vec_type = VEC_ALIASES["mfloat16"]
double2: vec_type = VEC_ALIASES["double2"]
mdouble2: vec_type = VEC_ALIASES["mdouble2"]
double3: vec_type = VEC_ALIASES["double3"]
mdouble3: vec_type = VEC_ALIASES["mdouble3"]
double4: vec_type = VEC_ALIASES["double4"]
mdouble4: vec_type = VEC_ALIASES["mdouble4"]
double8: vec_type = VEC_ALIASES["double8"]
mdouble8: vec_type = VEC_ALIASES["mdouble8"]
double16: vec_type = VEC_ALIASES["double16"]
mdouble16: vec_type = VEC_ALIASES["mdouble16"]
mbool2: vec_type = VEC_ALIASES["mbool2"]
mbool3: vec_type = VEC_ALIASES["mbool3"]
mbool4: vec_type = VEC_ALIASES["mbool4"]
mbool8: vec_type = VEC_ALIASES["mbool8"]
mbool16: vec_type = VEC_ALIASES["mbool16"]

__all__ = [
    "char2",
    "char3",
    "char4",
    "char8",
    "char16",
    "double2",
    "double3",
    "double4",
    "double8",
    "double16",
    "float2",
    "float3",
    "float4",
    "float8",
    "float16",
    "half2",
    "half3",
    "half4",
    "half8",
    "half16",
    "int2",
    "int3",
    "int4",
    "int8",
    "int16",
    "long2",
    "long3",
    "long4",
    "long8",
    "long16",
    "mbool2",
    "mbool3",
    "mbool4",
    "mbool8",
    "mbool16",
    "mchar2",
    "mchar3",
    "mchar4",
    "mchar8",
    "mchar16",
    "mdouble2",
    "mdouble3",
    "mdouble4",
    "mdouble8",
    "mdouble16",
    "mfloat2",
    "mfloat3",
    "mfloat4",
    "mfloat8",
    "mfloat16",
    "mhalf2",
    "mhalf3",
    "mhalf4",
    "mhalf8",
    "mhalf16",
    "mint2",
    "mint3",
    "mint4",
    "mint8",
    "mint16",
    "mlong2",
    "mlong3",
    "mlong4",
    "mlong8",
    "mlong16",
    "mshort2",
    "mshort3",
    "mshort4",
    "mshort8",
    "mshort16",
    "muchar2",
    "muchar3",
    "muchar4",
    "muchar8",
    "muchar16",
    "muint2",
    "muint3",
    "muint4",
    "muint8",
    "muint16",
    "mulong2",
    "mulong3",
    "mulong4",
    "mulong8",
    "mulong16",
    "mushort2",
    "mushort3",
    "mushort4",
    "mushort8",
    "mushort16",
    "short2",
    "short3",
    "short4",
    "short8",
    "short16",
    "uchar2",
    "uchar3",
    "uchar4",
    "uchar8",
    "uchar16",
    "uint2",
    "uint3",
    "uint4",
    "uint8",
    "uint16",
    "ulong2",
    "ulong3",
    "ulong4",
    "ulong8",
    "ulong16",
    "ushort2",
    "ushort3",
    "ushort4",
    "ushort8",
    "ushort16",
]
