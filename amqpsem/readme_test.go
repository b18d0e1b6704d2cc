package amqpsem_test

import (
	"testing"

	"github.com/fairsem/semaphore/internal/readmecheck"
)

// The README's Go snippets that use this module's packages compile as pasted into
// a function body.
func TestREADME_SnippetsOfThisModuleCompileInAFunctionBody(t *testing.T) {
	readmecheck.Check(t)
}
