// Package readmecheck checks the README's rule that every Go snippet compiles as
// pasted into a function body that returns an error.
//
// Each ```go block of README.md becomes one function,
//
//	func snippetN() error {
//		<the snippet>
//		return nil
//	}
//
// in a package generated for the check, with a //line directive so that the
// compiler reports README.md and the README's own line numbers. Check compiles
// the snippets of the module it is called from and fails the test with one error
// per compiler or vet message.
//
// Why a test and not a script: every module already runs its tests in CI
// (scripts/test.sh), so the check needs no new CI step, runs with the Go that
// builds the module, and fails like any other test. The root module's test lives
// in this package; each nested module (etcdsem, metrics/prom, metrics/otel,
// grpcsem) has a small test calling Check, since internal visibility is by
// import path and those modules' paths are below the root's.
//
// Why the snippets are split by module: a snippet using etcdsem, a metrics
// package or grpcsem can only be compiled in the module whose go.mod requires
// those dependencies, and the core module must not require them. A snippet
// belongs to the module of the packages it selects from (etcdsem. for etcdsem;
// prom. or prometheus. for metrics/prom; otel. or metric. for metrics/otel;
// grpcsem. or grpc. for grpcsem), and to the root module when it selects only
// from the root module's packages and the standard library. Identifiers are read with go/scanner, so a package named in
// a comment or a string (`// or otel.NewSemaphoreMetrics(meter)`) does not count.
// A snippet selecting from two nested modules cannot compile anywhere and is
// reported as such by the root test.
//
// Why a generated package inside the module: compiling inside the module's own
// directory uses its go.mod, go.sum and replace directives, so the snippet sees
// exactly the dependencies a user of that module gets, with no network access and
// no copy of the module graph. The directory's name starts with "_", so a
// concurrent `go ... ./...` in the module ignores it, and it is removed when the
// test ends.
//
// What a snippet may use without declaring it: the packages of the import table
// (added to its file only when it selects from them, so an unused import never
// hides or causes an error) and the free identifiers of the prelude (ctx, sem,
// ctrl, logger, client, ...: the values the README's prose assumes the reader
// has), declared at package level with plausible types. Package-level
// declarations cannot silence "declared and not used" for a variable the snippet
// itself declares, so that rule of the compiler applies to every snippet as it
// would in the reader's function. A snippet needing a new package or free
// identifier fails with "undefined: name"; add it to the table or the prelude.
//
// Why build, then vet: the compiler (with -gcflags=-e) reports every error of
// every snippet at once, where vet stops at the first type error of the package;
// vet then runs its analyzers on snippets that compile, except "unreachable",
// which would flag the generated return after a snippet ending in return. Both
// run once per module, on one package with one file per snippet, so the check
// costs one compilation of a small package.
//
// The go command is the one on PATH: `go test` puts the GOROOT/bin of the go
// command running the tests first on the test's PATH, so the snippets are
// compiled by the same toolchain as the test.
package readmecheck
