# Homebrew formula for mnemo: `brew install --build-from-source packaging/homebrew/mnemo.rb`,
# then `brew services start mnemo`.
class Mnemo < Formula
  desc "Local memory service for personal AI: mnemod, the mnemo CLI and mnemo-top"
  homepage "https://example.invalid/mnemo"
  url "https://example.invalid/mnemo/archive/v0.1.0.tar.gz"
  version "0.1.0"
  license any_of: ["MIT", "Apache-2.0"]

  depends_on "protobuf" => :build
  depends_on "rust" => :build
  depends_on "python@3.12" => :build

  def install
    system "cargo", "build", "--release", "--locked", "--bins"
    %w[mnemod mnemo mnemo-top].each do |bin|
      bin.install "target/release/#{bin}"
      (man1/"#{bin}.1").write Utils.safe_popen_read(bin/bin, "--generate-man")
    end
    generate_completions_from_executable(bin/"mnemo", "completions")
    pkgshare.install "packaging/fetch-model.sh"
  end

  def caveats
    <<~EOS
      mnemod needs the embedding model once:
        #{opt_pkgshare}/fetch-model.sh
      then start it with:
        brew services start mnemo
    EOS
  end

  service do
    run [opt_bin/"mnemod", "run"]
    keep_alive successful_exit: false
    process_type :background
    log_path var/"log/mnemo/mnemod.log"
    error_log_path var/"log/mnemo/mnemod.log"
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/mnemo --version")
    assert_match "mnemod", shell_output("#{bin}/mnemod --help")
  end
end
