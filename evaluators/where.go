package evaluators

// CompileCondition compiles a CEL condition over `results` and `case`
// exactly as run_if reads them (§21): evalctl's `dataset add --where`
// selects the cases to capture with it. The caller checks RunIf.Names
// against the evaluators it runs.
func CompileCondition(expr string) (*RunIf, error) { return compileRunIf(expr) }
