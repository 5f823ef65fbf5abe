// Catch2 3.x (Debian 13) under the one header the tests include, Catch2 2's (Debian 12): meson puts
// this directory on the include path only where it finds Catch2 3 (tests/meson.build).
#pragma once

#include <catch2/catch_all.hpp>

using Catch::Approx;
