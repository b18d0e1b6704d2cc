module github.com/fairsem/semaphore/amqpsem

go 1.25.0

replace github.com/fairsem/semaphore => ../

require (
	github.com/fairsem/semaphore v0.1.0
	github.com/rabbitmq/amqp091-go v1.16.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
