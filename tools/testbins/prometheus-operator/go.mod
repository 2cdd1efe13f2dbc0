module testbins.local/prometheus-operator

go 1.24

require github.com/prometheus-operator/prometheus-operator v0.85.0
