// The standard normal distribution: CDF and its inverse, accurate to about 1e-15, so that two
// independent implementations of the model agree to 1e-9.
#pragma once

namespace depl::solver {

double normal_cdf(double x);
// Inverse CDF for p in (0,1).
double normal_quantile(double p);

}  // namespace depl::solver
