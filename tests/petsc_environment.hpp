#pragma once
// PETSc for the whole test process: a test file that drives TAO registers
//   const auto* const kPetsc = ::testing::AddGlobalTestEnvironment(new test::PetscEnvironment);

#include <gtest/gtest.h>

#include <memory>

#include "gprfwi/inversion.hpp"

namespace gprfwi::test {

class PetscEnvironment : public ::testing::Environment {
public:
    void SetUp() override { petsc_ = std::make_unique<PetscSession>(""); }
    void TearDown() override { petsc_.reset(); }

private:
    std::unique_ptr<PetscSession> petsc_;
};

}  // namespace gprfwi::test
