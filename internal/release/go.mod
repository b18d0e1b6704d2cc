module github.com/fairsem/semaphore/internal/release

go 1.26.0

require (
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/mod v0.43.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
