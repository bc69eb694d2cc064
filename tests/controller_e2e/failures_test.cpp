#include "e2e_fixture.hpp"
