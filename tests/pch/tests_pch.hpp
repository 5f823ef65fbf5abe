// Precompiled for the test executables: Catch2 is one large header every test file includes.
#include <catch2/catch.hpp>
