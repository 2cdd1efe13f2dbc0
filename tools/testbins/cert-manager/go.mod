module testbins.local/cert-manager

go 1.24

require github.com/cert-manager/cert-manager v1.18.2
