package server

import "github.com/getkin/kin-openapi/openapi3"

// SpecLoad is the API's embedded OpenAPI document being decoded in the
// background. Decoding takes ~25 ms and needs nothing else, so tetherd
// starts it before opening its store and has it ready when reconciliation
// ends and New builds the request validator, instead of after.
type SpecLoad struct {
	done chan struct{}
	spec *openapi3.T
	err  error
}

// LoadSpec starts decoding the document. Its goroutine ends by itself;
// Wait (which the caller must reach before it returns) collects it.
func LoadSpec() *SpecLoad {
	l := &SpecLoad{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.spec, l.err = GetSwagger()
	}()
	return l
}

// Wait returns the decoded document once it is ready.
func (l *SpecLoad) Wait() (*openapi3.T, error) {
	<-l.done
	return l.spec, l.err
}
