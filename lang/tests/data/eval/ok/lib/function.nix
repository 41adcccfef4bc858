{ name, suffix ? "!" }: "hi ${name}${suffix}"
