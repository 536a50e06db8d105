module husk.test/gostress

go 1.19
