// RETURN_IF_ERROR and ASSIGN_OR_RETURN (base/status_macros.h): a failure returns at once,
// unchanged; success goes on with the value; the expression runs once either way.
#include "base/status_macros.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

using namespace hookbox;

namespace {

int calls = 0;

Status Step(bool ok) {
  ++calls;
  return ok ? Status::Ok() : Status::Unavailable("step failed", "disk full");
}

StatusOr<std::unique_ptr<int>> Make(bool ok, int n) {
  ++calls;
  if (!ok) return Status::NotFound("no value", std::to_string(n));
  return std::make_unique<int>(n);
}

Status TwoSteps(bool first, bool second, int* reached) {
  RETURN_IF_ERROR(Step(first));
  *reached = 1;
  RETURN_IF_ERROR(Step(second));
  *reached = 2;
  return Status::Ok();
}

StatusOr<int> Sum(bool first, bool second) {
  ASSIGN_OR_RETURN(auto a, Make(first, 2));  // move-only: moved out, not copied
  ASSIGN_OR_RETURN(const std::unique_ptr<int>& b, Make(second, 3));
  RETURN_IF_ERROR(Make(true, 0));  // a StatusOr's status, its value unused
  return *a + *b;
}

}  // namespace

TEST_CASE("RETURN_IF_ERROR: returns the first failure as it is, and runs each step once") {
  int reached = 0;
  calls = 0;
  CHECK(TwoSteps(true, true, &reached).ok());
  CHECK(reached == 2);
  CHECK(calls == 2);

  reached = 0;
  calls = 0;
  const Status s = TwoSteps(true, false, &reached);
  CHECK(s.code() == Status::Code::kUnavailable);
  CHECK(s.ToString() == "step failed: disk full");
  CHECK(reached == 1);
  CHECK(calls == 2);

  reached = 0;
  calls = 0;
  CHECK(TwoSteps(false, true, &reached).code() == Status::Code::kUnavailable);
  CHECK(reached == 0);
  CHECK(calls == 1);
}

TEST_CASE("ASSIGN_OR_RETURN: the value on success, the failure otherwise") {
  calls = 0;
  auto sum = Sum(true, true);
  REQUIRE(sum.ok());
  CHECK(*sum == 5);
  CHECK(calls == 3);

  calls = 0;
  auto failed = Sum(true, false);
  CHECK(failed.status().code() == Status::Code::kNotFound);
  CHECK(failed.status().ToString() == "no value: 3");
  CHECK(calls == 2);
}

TEST_CASE("ASSIGN_OR_RETURN: nested in a lambda inside another's expression") {
  auto run = [](bool second_ok) -> StatusOr<int> {
    ASSIGN_OR_RETURN(const int n, ([&]() -> StatusOr<int> {
                       ASSIGN_OR_RETURN(auto a, Make(true, 4));
                       ASSIGN_OR_RETURN(auto b, Make(second_ok, 5));
                       return *a * *b;
                     }()));
    return n + 1;
  };
  CHECK(*run(true) == 21);
  CHECK(run(false).status().ToString() == "no value: 5");
}
