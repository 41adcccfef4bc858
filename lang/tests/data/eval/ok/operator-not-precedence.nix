[ (!true || true) (!(true || true)) (!false && false) ]
