"""Build of the compiled per-page pass (Cython over lxml and its libxml2); the rest is in pyproject.toml."""

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

NATIVE = ("extract", "markup", "tokens", "sketch", "page", "bucketmap", "chance")

extensions = [
    Extension(
        f"neardup_scrapy.core.native.{name}",
        [f"neardup_scrapy/core/native/{name}.pyx"],
        include_dirs=lxml.get_include(),
        extra_compile_args=["-O2"],
    )
    for name in NATIVE
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": "3", "embedsignature": True},
    )
)
